package relstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// ledgerConn is an in-memory ledger that understands the statements Schema issues.
type ledgerConn struct {
	version int
	ran     []string
	failOn  string
}

func (c *ledgerConn) Exec(_ context.Context, q string, args ...any) error {
	if c.failOn != "" && strings.Contains(q, c.failOn) {
		return errors.New("boom")
	}
	c.ran = append(c.ran, q)
	if strings.HasPrefix(q, "INSERT INTO ledger") {
		c.version = args[0].(int)
	}
	return nil
}

func (c *ledgerConn) QueryInt(context.Context, string, ...any) (int, error) { return c.version, nil }

func TestSchemaMigrate(t *testing.T) {
	s := Schema{
		Backend: "test", Ledger: "ledger", LedgerColumns: "version int",
		Record:     func(v int) (string, []any) { return "INSERT INTO ledger", []any{v} },
		Migrations: []string{1: "m1", 2: "m2", 3: "m3"},
	}
	tests := []struct {
		name      string
		from      int
		failOn    string
		wantRan   []string
		wantTo    int
		wantErr   string
		adapterEr bool
	}{
		{name: "new database", from: 0, wantRan: []string{"CREATE TABLE IF NOT EXISTS ledger (version int)", "m1", "INSERT INTO ledger", "m2", "INSERT INTO ledger", "m3", "INSERT INTO ledger"}, wantTo: 3},
		{name: "one behind", from: 2, wantRan: []string{"CREATE TABLE IF NOT EXISTS ledger (version int)", "m3", "INSERT INTO ledger"}, wantTo: 3},
		{name: "current", from: 3, wantRan: []string{"CREATE TABLE IF NOT EXISTS ledger (version int)"}, wantTo: 3},
		{name: "newer than this build", from: 4, wantErr: "test: database schema version 4 is newer than this adapter's 3", adapterEr: true, wantTo: 4,
			wantRan: []string{"CREATE TABLE IF NOT EXISTS ledger (version int)"}},
		{name: "failing migration stops", from: 0, failOn: "m2", wantErr: "migrate to version 2: boom", wantTo: 1,
			wantRan: []string{"CREATE TABLE IF NOT EXISTS ledger (version int)", "m1", "INSERT INTO ledger"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &ledgerConn{version: tt.from, failOn: tt.failOn}
			err := s.Migrate(context.Background(), c)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(errors.Is(err, memory.ErrAdapter)).To(Equal(tt.adapterEr))
			}
			g.Expect(c.ran).To(Equal(tt.wantRan))
			g.Expect(c.version).To(Equal(tt.wantTo))
			p := s.Probe(context.Background(), c)
			g.Expect(p.OK).To(Equal(tt.wantTo == 3))
			g.Expect(p.Detail).To(Equal(fmt.Sprintf("have %d, want 3", tt.wantTo)))
		})
	}
}

func TestOptionsManifest(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		wantID  string
		wantErr string
	}{
		{name: "defaults", o: Options{Backend: "b", Scope: "s", DefaultAdapterID: "b"}, wantID: "b"},
		{name: "own id", o: Options{Backend: "b", Scope: "s", DefaultAdapterID: "b", AdapterID: "acme"}, wantID: "acme"},
		{name: "bad scope", o: Options{Backend: "b", Scope: "no spaces", DefaultAdapterID: "b"}, wantErr: "b: options: scope"},
		{name: "bad filter", o: Options{Backend: "b", Scope: "s", DefaultAdapterID: "b", SupportedFilters: []string{""}}, wantErr: "b: options: manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			m, err := tt.o.Manifest()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(errors.Is(err, memory.ErrAdapter)).To(BeTrue())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.Adapter).To(Equal(tt.wantID))
			g.Expect(m.SupportedFilters).To(Equal(memory.DefaultSupportedFilters()))
			g.Expect(m.Validate()).To(Succeed())
		})
	}
}
