//go:build unix

package pgtest

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
)

// portHold holds a port by a socket bound to it that does not listen: the
// system refuses connections to it, and lets no other socket bind it.
type portHold struct {
	mu sync.Mutex
	fd int // -1 once released or listening
}

func (h *portHold) hold() (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return 0, err
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return 0, err
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		_ = syscall.Close(fd)
		return 0, err
	}
	h.fd = fd
	return sa.(*syscall.SockaddrInet4).Port, nil
}

func (h *portHold) listen() (net.Listener, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd < 0 {
		return nil, errors.New("the port is no longer held")
	}
	if err := syscall.Listen(h.fd, syscall.SOMAXCONN); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(h.fd), "held port")
	h.fd = -1
	defer f.Close()
	return net.FileListener(f)
}

func (h *portHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		_ = syscall.Close(h.fd)
		h.fd = -1
	}
}
