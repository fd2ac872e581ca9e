// Package rpcstore serves a statestore.Backend to another process over a
// byte stream (net/rpc), and is the Backend that process uses. The local
// executor runs the container task as a child process of the same binary;
// the embedded state store is one file that a single process holds open,
// so the child reaches it through its parent: one record store, whatever
// the number of processes, as DynamoDB is on AWS.
package rpcstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"strings"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

// service is the RPC receiver; its method set is the wire protocol.
type service struct{ b statestore.Backend }

// PutArgs is a Put request.
type PutArgs struct {
	Job    statestore.Job
	Expect int64
}

// Empty is an empty reply.
type Empty struct{}

// sentinels cross the wire by their message: the callers branch on them
// (errors.Is), and net/rpc carries an error as its text only. The server
// puts the sentinel's text first (wire), the client finds it (call).
var sentinels = []error{statestore.ErrNotFound, statestore.ErrConflict}

const sentinelSep = " | "

func wire(err error) error {
	for _, s := range sentinels {
		if err != nil && errors.Is(err, s) {
			return errors.New(s.Error() + sentinelSep + err.Error())
		}
	}
	return err
}

func (s *service) Get(id string, reply *statestore.Job) error {
	j, err := s.b.Get(context.Background(), id)
	*reply = j
	return wire(err)
}

func (s *service) Put(args PutArgs, reply *Empty) error {
	return wire(s.b.Put(context.Background(), args.Job, args.Expect))
}

// List answers with every job at once: the child lists nothing in the
// steps it runs (Convert reads and writes one record), so a stream is not
// worth its protocol.
func (s *service) List(status statestore.Status, reply *[]statestore.Job) error {
	return wire(s.b.List(context.Background(), status, func(j statestore.Job) error {
		*reply = append(*reply, j)
		return nil
	}))
}

// Serve answers requests on conn with b until conn is closed (the child
// exited); it returns then.
func Serve(conn io.ReadWriteCloser, b statestore.Backend) {
	srv := rpc.NewServer()
	if err := srv.RegisterName("Backend", &service{b: b}); err != nil {
		panic(fmt.Sprintf("rpcstore.Serve: %v", err)) // the method set above is valid
	}
	srv.ServeConn(conn)
}

// Client is a statestore.Backend served by another process's Serve.
type Client struct{ c *rpc.Client }

// NewClient returns the Backend at the other end of conn.
func NewClient(conn io.ReadWriteCloser) *Client { return &Client{c: rpc.NewClient(conn)} }

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

// call makes one call, giving up when ctx ends (the call itself then
// finishes in the background).
func (c *Client) call(ctx context.Context, method string, args, reply any) error {
	call := c.c.Go("Backend."+method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-ctx.Done():
		return fmt.Errorf("rpcstore.%s: %w", method, ctx.Err())
	case <-call.Done:
	}
	if call.Error == nil {
		return nil
	}
	var se rpc.ServerError
	if errors.As(call.Error, &se) {
		for _, s := range sentinels {
			if rest, ok := strings.CutPrefix(string(se), s.Error()+sentinelSep); ok {
				return fmt.Errorf("rpcstore.%s: %s: %w", method, rest, s)
			}
		}
	}
	return fmt.Errorf("rpcstore.%s: %w", method, call.Error)
}

func (c *Client) Get(ctx context.Context, id string) (statestore.Job, error) {
	var j statestore.Job
	err := c.call(ctx, "Get", id, &j)
	return j, err
}

func (c *Client) Put(ctx context.Context, job statestore.Job, expect int64) error {
	return c.call(ctx, "Put", PutArgs{Job: job, Expect: expect}, &Empty{})
}

func (c *Client) List(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error {
	var jobs []statestore.Job
	if err := c.call(ctx, "List", status, &jobs); err != nil {
		return err
	}
	for _, j := range jobs {
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}

var _ statestore.Backend = (*Client)(nil)
