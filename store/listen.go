package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Listener receives the notifications sends make (see NotifyChannel) on a
// connection of its own, outside the pool. It is not safe for concurrent use.
type Listener struct {
	conn *pgx.Conn
}

// Listen opens a dedicated connection with the pool's settings and subscribes
// it to send notifications. Notifications made before Listen returns are not
// received: a caller that must not miss a message reads its queues after
// Listen. Close the listener when done.
func (s *Store) Listen(ctx context.Context) (*Listener, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{notifyChannel}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &Listener{conn: conn}, nil
}

// WaitForSend blocks until a send notifies and returns the physical queue
// name it sent to. It returns an error when ctx ends or the connection is
// lost; after a lost connection, Close the listener and Listen again.
func (l *Listener) WaitForSend(ctx context.Context) (queue string, err error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		return "", err
	}
	return n.Payload, nil
}

// Close closes the listener's connection.
func (l *Listener) Close(ctx context.Context) error {
	return l.conn.Close(ctx)
}
