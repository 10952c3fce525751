package khivefake

import (
	"io"
	"sync"
)

// pipeConn is the client end of an in-process server.
type pipeConn struct {
	r    *io.PipeReader
	w    *io.PipeWriter
	done chan struct{}
	once sync.Once
}

// Pipe serves s in a goroutine and returns the client's end: reads are the server's
// output, writes its input. Close stops the server the way killing the child would: the
// client's pending reads end at once.
func Pipe(s *Server) io.ReadWriteCloser {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeConn{r: outR, w: inW, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		err := s.Serve(inR, outW)
		if err == nil {
			err = io.EOF
		}
		// The server is gone: its output ends and its input refuses further writes.
		_ = outW.CloseWithError(err)
		_ = inR.CloseWithError(err)
	}()
	return c
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Close ends both directions; a server blocked by the HangOn knob is abandoned, as a
// killed process would be.
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		_ = c.w.CloseWithError(io.ErrClosedPipe)
		_ = c.r.CloseWithError(io.EOF)
	})
	return nil
}
