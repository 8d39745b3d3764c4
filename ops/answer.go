package ops

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pgbus/pgbus/store"
)

// Deferred gets a person's go-ahead over two calls of one request, for a
// front end that cannot wait within a call for the answer: an MCP client
// of protocol 2026-07-28 or later answers a question by making the call
// again (multi round-trip requests). The first call (Answered false)
// changes nothing and fails with a *Question; the second brings back the
// question's State with the person's answer. An answer is refused with
// ErrNotAsked when its state is not one pgbus issued or was altered, when
// it comes with a request other than the one asked about, or later than
// AnswerWithin; a discard then moves, on a yes, exactly the set the person
// was asked about, or nothing if that set changed.
type Deferred struct {
	// Answered marks the second call, which carries State and Yes.
	Answered bool
	// State is the State of the first call's Question, unchanged.
	State string
	// Yes is the person's answer: false when they declined, cancelled or
	// did not tick the box.
	Yes bool
}

// Question is the error of the first call of a Deferred confirmation:
// nothing was done. The front end asks the person Text, then makes the same
// call again with State and their answer.
type Question struct {
	Text  string
	State string
}

func (q *Question) Error() string { return "ops: waiting for a person's answer to: " + q.Text }

// isQuestion reports whether err is a Question: a call that did nothing
// yet, which the call bringing the answer audits.
func isQuestion(err error) bool {
	var q *Question
	return errors.As(err, &q)
}

// ErrNotAsked is wrapped by the refusal of an answer that is not the answer
// to the question the call asked (see Deferred). Nothing was written.
var ErrNotAsked = errors.New("not the answer to the question asked")

// AnswerWithin is how long after its question an answer is taken. A purge
// deletes what is older than its age when it runs, so a yes kept for days
// would delete more than the person was asked about.
const AnswerWithin = 15 * time.Minute

// askState is what a Question's State seals: the operation, the call asked
// about (its digest, see callDigest), for a discard the expect token of the
// set the person was shown, and when they were asked.
type askState struct {
	Op    string `json:"op"`
	Call  string `json:"call"`
	Set   string `json:"set,omitempty"`
	Asked int64  `json:"asked"`
}

// callDigest is the digest of a call's arguments and of who made it, so
// that an answer given to one call cannot be carried over to another.
func callDigest(ctx context.Context, call any) string {
	b, _ := json.Marshal(struct {
		Principal string
		Call      any
	}{CallerFrom(ctx).Principal, call})
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ask returns the Question of the first call of a Deferred confirmation of
// op: text, and the sealed state of call and of set (a discard's expect
// token; "" for a purge). undone names what was not done (discarded).
func (s *Service) ask(ctx context.Context, op string, call any, set, text, undone string) error {
	b, err := json.Marshal(askState{Op: op, Call: callDigest(ctx, call), Set: set, Asked: s.now().Unix()})
	if err == nil {
		var state string
		if state, err = s.store.SealState(ctx, b); err == nil {
			return &Question{Text: text, State: state}
		}
	}
	return fmt.Errorf("ops: could not ask for confirmation, so nothing was %s: %w", undone, err)
}

// answered checks that d answers the question op asked about call, and
// returns whether the person declined, and the set they were asked about.
func (s *Service) answered(ctx context.Context, op string, call any, d *Deferred, undone string) (declined bool, set string, err error) {
	refuse := func(why string) error {
		return &Error{Msg: why + "; nothing was " + undone + ": make the call again, without the answer, to have the person asked again", Err: ErrNotAsked}
	}
	if d.State == "" {
		return false, "", refuse("the answer came back without the state of its question")
	}
	raw, err := s.store.OpenState(ctx, d.State)
	var st askState
	switch {
	case errors.Is(err, store.ErrNotSealed) || (err == nil && json.Unmarshal(raw, &st) != nil):
		return false, "", refuse("the state that came back with the answer is not one pgbus issued, or was altered")
	case err != nil:
		return false, "", fmt.Errorf("ops: could not check the answer, so nothing was %s: %w", undone, err)
	case st.Op != op || st.Call != callDigest(ctx, call):
		return false, "", refuse("the answer is to another call: the arguments differ from those the person was asked about")
	}
	if late := s.now().Sub(time.Unix(st.Asked, 0)); late > AnswerWithin {
		return false, "", refuse(fmt.Sprintf("the answer came %s after its question, later than the %s an answer is taken", late.Round(time.Second), AnswerWithin))
	}
	return !d.Yes, st.Set, nil
}
