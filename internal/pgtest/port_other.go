//go:build !unix

package pgtest

import (
	"errors"
	"net"
	"strconv"
)

// portHold, without Unix sockets to bind and not listen on, finds a free
// port and releases it: another socket may take it meanwhile.
type portHold struct{ port int }

func (h *portHold) hold() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	h.port = ln.Addr().(*net.TCPAddr).Port
	return h.port, ln.Close()
}

func (h *portHold) listen() (net.Listener, error) {
	if h.port == 0 {
		return nil, errors.New("no port held")
	}
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(h.port)))
}

func (h *portHold) release() {}
