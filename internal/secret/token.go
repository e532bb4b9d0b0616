package secret

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MinTokenLen is the shortest admin token accepted, counted after
// surrounding whitespace is trimmed: 32 characters of a generated token
// are far beyond guessing, 10 guesses a minute per address.
const MinTokenLen = 32

// ErrWeakToken means a token file holds fewer than MinTokenLen characters.
var ErrWeakToken = fmt.Errorf("shorter than %d characters: write a long random token (posedge gen-admin-token)", MinTokenLen)

// ReadToken reads an admin token file: its content trimmed of whitespace,
// at least MinTokenLen characters. The error never quotes the content.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, errors.Unwrap(err))
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", fmt.Errorf("%s is empty: %w", path, ErrWeakToken)
	case len(tok) < MinTokenLen:
		return "", fmt.Errorf("%s: %w", path, ErrWeakToken)
	case strings.ContainsAny(tok, " \t\r\n"):
		return "", fmt.Errorf("%s: holds more than one word: the whole file (trimmed) is the token", path)
	}
	return tok, nil
}

// NewToken returns 32 random bytes in URL-safe base64 (43 characters).
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
