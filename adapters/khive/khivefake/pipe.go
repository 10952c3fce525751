package khivefake

import (
	"context"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeConn is the client end of an in-process server.
type pipeConn struct {
	r    *io.PipeReader
	w    *io.PipeWriter
	once sync.Once
}

// Pipe serves s in a goroutine and returns the client's end as a byte stream: reads are the
// server's output, writes its input. A byte stream rather than mcp.NewInMemoryTransports,
// so that a client runs the same transport code in-process as over a child's stdio. Close
// stops the server the way killing the child would: the client's pending reads end at once.
func Pipe(s *Server) io.ReadWriteCloser {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		err := s.Run(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW})
		if err == nil {
			err = io.EOF
		}
		// The server is gone: its output ends and its input refuses further writes.
		_ = outW.CloseWithError(err)
		_ = inR.CloseWithError(err)
	}()
	return &pipeConn{r: outR, w: inW}
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close ends both directions; a server blocked by the HangOn knob sees its input end and
// gives up the call, as a killed process would.
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		_ = c.w.CloseWithError(io.ErrClosedPipe)
		_ = c.r.CloseWithError(io.EOF)
	})
	return nil
}
