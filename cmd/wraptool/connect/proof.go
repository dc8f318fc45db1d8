package connect

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/wraptool/wraptool/actors"
)

// ProofTimeout bounds the proof on one connection: a listener that accepts
// and then says nothing is refused once it passes.
const ProofTimeout = 2 * time.Second

// Prove makes the listening end of c prove it holds token before anything
// carrying the token is written on c: a fresh random nonce and the token's
// key id (actors.ProofKeyID, never the token) go out, and only
// actors.ConnectProof of that nonce, for the address c is connected to,
// compared with hmac.Equal, lets c be used. host is the Host header (the
// listener's DNS-rebinding check). An answer that is no proof (no
// endpoint, a wrong or replayed proof, bytes after it) wraps ErrNoProof,
// which stops connect; a listener that gives no answer at all (the
// connection reset or closed, silence until ctx ends or ProofTimeout
// passes: a server dying or still starting) is an error that does not, so
// connect tries again within its bound. Either way c is then to be closed
// unused, and nothing but the nonce and the key id was sent.
//
// The request is HTTP/1.1 with keep-alive on c itself, so the connection
// that proved is the one that will carry the token: no other process can
// step in between the proof and the token.
func Prove(ctx context.Context, c net.Conn, host, token string) error {
	addr := c.RemoteAddr().String()
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: the listener at %s %s", ErrNoProof, addr, fmt.Sprintf(format, a...))
	}
	silent := func(format string, a ...any) error {
		return fmt.Errorf("the listener at %s %s", addr, fmt.Sprintf(format, a...))
	}
	raw := make([]byte, actors.ProofNonceLen)
	rand.Read(raw) // never fails (crypto/rand)
	nonce := hex.EncodeToString(raw)
	body, _ := json.Marshal(actors.ProofRequest{Nonce: nonce, Key: actors.ProofKeyID(token)})
	req, err := http.NewRequest(http.MethodPost, "http://"+host+actors.ProofPath, bytes.NewReader(body))
	if err != nil {
		return fail("cannot be asked: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")

	deadline := time.Now().Add(ProofTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if err := req.Write(c); err != nil {
		return silent("took no proof request: %v", err)
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return silent("gave no answer to the proof request (%v)", err)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	if err != nil {
		return silent("gave no whole answer to the proof request (%v)", err)
	}
	if resp.StatusCode == http.StatusNotFound && bytes.Contains(answer, []byte(`"unknown_key"`)) {
		return fail("says it holds no such token: check the token file, or another program holds the address")
	}
	if resp.StatusCode != http.StatusOK {
		return fail("gave no proof (%s): another program holds the address", resp.Status)
	}
	if br.Buffered() != 0 || resp.Close {
		// Bytes the bufio reader took past the answer would be lost to the
		// connection's next user; and a connection closing after the proof
		// is of no use.
		return fail("sent more than its proof")
	}
	var a actors.ProofAnswer
	got, herr := []byte(nil), error(nil)
	if err := json.Unmarshal(answer, &a); err == nil {
		got, herr = hex.DecodeString(a.Proof)
	}
	if herr != nil || !hmac.Equal(got, actors.ConnectProof(token, nonce, addr)) {
		return fail("answered with a wrong proof: it does not hold the token, so another program holds the address")
	}
	return nil
}

// refusing reports whether err is about a listener that is not to get the
// token (another user's, or one that could not prove it holds the token):
// the bridge stops at once rather than wait for it.
func refusing(err error) bool {
	return errors.Is(err, ErrForeignOwner) || errors.Is(err, ErrNoProof)
}
