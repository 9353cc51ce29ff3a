package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Role is what a token may do. contract 3 of docs/architecture.md assigns each endpoint a role.
type Role string

// The roles. Admin may do everything.
const (
	RoleAgent    Role = "agent"
	RoleApprover Role = "approver"
	RoleAuditor  Role = "auditor"
	RoleAdmin    Role = "admin"
	// RoleReader may only read allowlisted files through the read-only language
	// (Execute: /v1/execute, the MCP execute tool) and page its own results: a token
	// for an agent that must never run anything.
	RoleReader Role = "reader"
)

// Roles lists the valid roles.
var Roles = []Role{RoleAgent, RoleApprover, RoleAuditor, RoleAdmin, RoleReader}

// ParseRole validates a role name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if slices.Contains(Roles, r) {
		return r, nil
	}
	return "", fmt.Errorf("unknown role %q (want agent, approver, auditor, admin or reader)", s)
}

// Token is a stored token: its secret is never kept, only the SHA-256 of it. A token
// is a 256-bit random value, so an unsalted hash cannot be reversed by guessing.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Role      Role       `json:"role"`
	Hash      string     `json:"hash"` // hex SHA-256 of the secret
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Revoked reports whether the token was revoked.
func (t Token) Revoked() bool { return t.RevokedAt != nil }

// tokenPrefix marks cmdgate secrets so that secret scanners and people recognise them.
const tokenPrefix = "cmdgate_"

// TokensFile is the name of the token file in the data directory.
const TokensFile = "tokens.json"

// Token store errors.
var (
	ErrTokenNotFound = errors.New("no such token")
	ErrTokenExists   = errors.New("a token with that name exists")
	ErrTokenName     = errors.New("invalid token name")
	// ErrTokenUnknown: no token has the presented secret.
	ErrTokenUnknown = errors.New("unknown token")
	// ErrTokenRevoked: the presented secret belongs to a revoked token.
	ErrTokenRevoked = errors.New("revoked token")
)

// TokenStore keeps the tokens in one JSON file in the data directory (mode 0600).
// Changes are written atomically (temp file, fsync, rename) under an exclusive lock
// file, so `cmdgate token create` may run beside a serving gateway: the gateway
// notices the file changed and reloads it on the next authentication.
// A TokenStore is safe for concurrent use.
type TokenStore struct {
	path string

	mu     sync.RWMutex
	tokens []Token
	hashes []tokenHash // tokens[i]'s hash, decoded once per read of the file
	stamp  fileStamp   // of the file the tokens were read from
}

// tokenHash is a token's Hash decoded; ok is false for one that is not a hex SHA-256
// (a hand-edited file), which no secret matches.
type tokenHash struct {
	sum [sha256.Size]byte
	ok  bool
}

// decodeHashes decodes the tokens' hashes.
func decodeHashes(tokens []Token) []tokenHash {
	hashes := make([]tokenHash, len(tokens))
	for i, t := range tokens {
		if b, err := hex.DecodeString(t.Hash); err == nil && len(b) == sha256.Size {
			hashes[i] = tokenHash{sum: [sha256.Size]byte(b), ok: true}
		}
	}
	return hashes
}

// fileStamp identifies one version of the token file; a change of any field
// (including the mode, which is checked on read) makes the store re-read it.
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
	mode os.FileMode
}

// OpenTokens opens (creating when absent) the token store in dir.
func OpenTokens(dir string) (*TokenStore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	s := &TokenStore{path: filepath.Join(dir, TokensFile)}
	if err := s.reload(true); err != nil {
		return nil, err
	}
	return s, nil
}

// Create makes a token with a fresh secret, stores its hash and returns the secret,
// which is shown once and cannot be recovered.
func (s *TokenStore) Create(name string, role Role) (secret string, tok Token, err error) {
	if err := validTokenName(name); err != nil {
		return "", Token{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return "", Token{}, err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("generate token: %w", err)
	}
	secret = tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", Token{}, fmt.Errorf("generate token id: %w", err)
	}
	tok = Token{
		ID:        hex.EncodeToString(id[:]),
		Name:      name,
		Role:      role,
		Hash:      hashSecret(secret),
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	err = s.update(func(tokens []Token) ([]Token, error) {
		for _, t := range tokens {
			if t.Name == name && !t.Revoked() {
				return nil, fmt.Errorf("%w: %q", ErrTokenExists, name)
			}
		}
		return append(tokens, tok), nil
	})
	if err != nil {
		return "", Token{}, err
	}
	return secret, tok, nil
}

// Revoke revokes the live token with the given name or id.
func (s *TokenStore) Revoke(nameOrID string) (Token, error) {
	var revoked Token
	err := s.update(func(tokens []Token) ([]Token, error) {
		for i, t := range tokens {
			if t.Revoked() || (t.Name != nameOrID && t.ID != nameOrID) {
				continue
			}
			now := time.Now().UTC().Truncate(time.Second)
			tokens[i].RevokedAt = &now
			revoked = tokens[i]
			return tokens, nil
		}
		return nil, fmt.Errorf("%w: %q", ErrTokenNotFound, nameOrID)
	})
	return revoked, err
}

// List returns the tokens (without secrets), oldest first.
func (s *TokenStore) List() ([]Token, error) {
	if err := s.reload(false); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.tokens), nil
}

// Authenticate returns the live token whose secret this is. Every stored hash is
// compared in constant time, so the time taken says nothing about which one matched.
// A token file that cannot be re-read denies (fail closed).
func (s *TokenStore) Authenticate(secret string) (Token, bool) {
	tok, err := s.Check(secret)
	return tok, err == nil
}

// Check is Authenticate with the reason of a refusal: ErrTokenUnknown (no token has
// this secret, or it is not shaped like one), ErrTokenRevoked (it was revoked), or the
// error reading the token file (fail closed: nothing is authenticated then). Every
// stored hash is compared in constant time.
func (s *TokenStore) Check(secret string) (Token, error) {
	if !strings.HasPrefix(secret, tokenPrefix) || len(secret) > 256 {
		return Token{}, ErrTokenUnknown
	}
	if err := s.reload(false); err != nil {
		return Token{}, err
	}
	h := sha256.Sum256([]byte(secret))
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found Token
	matched := 0
	for i, want := range s.hashes {
		if want.ok && subtle.ConstantTimeCompare(want.sum[:], h[:]) == 1 {
			found, matched = s.tokens[i], 1
		}
	}
	switch {
	case matched == 0:
		return Token{}, ErrTokenUnknown
	case found.Revoked():
		return Token{}, ErrTokenRevoked
	}
	return found, nil
}

// Live reports whether any unrevoked token exists.
func (s *TokenStore) Live() (int, error) {
	tokens, err := s.List()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tokens {
		if !t.Revoked() {
			n++
		}
	}
	return n, nil
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func validTokenName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: must be 1 to 64 characters", ErrTokenName)
	}
	for _, r := range name {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.@", r)) {
			return fmt.Errorf("%w %q: use letters, digits and - _ . @ only", ErrTokenName, name)
		}
	}
	return nil
}

// reload re-reads the file when it changed since the last read (or always when force).
func (s *TokenStore) reload(force bool) error {
	st, err := statFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		s.mu.Lock()
		s.tokens, s.hashes, s.stamp = nil, nil, fileStamp{}
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat token file: %w", err)
	}
	s.mu.RLock()
	same := s.stamp == st
	s.mu.RUnlock()
	if same && !force {
		return nil
	}
	tokens, st, err := readTokens(s.path)
	if err != nil {
		return err
	}
	hashes := decodeHashes(tokens)
	s.mu.Lock()
	s.tokens, s.hashes, s.stamp = tokens, hashes, st
	s.mu.Unlock()
	return nil
}

// update applies change to the tokens on disk under the lock file and writes the
// result atomically.
func (s *TokenStore) update(change func([]Token) ([]Token, error)) error {
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	tokens, _, err := readTokens(s.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tokens, err = change(tokens)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.path, tokens); err != nil {
		return err
	}
	return s.reload(true)
}

type tokenFile struct {
	Version int     `json:"version"`
	Tokens  []Token `json:"tokens"`
}

func readTokens(path string) ([]Token, fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("open token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("stat token file: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fileStamp{}, fmt.Errorf("token file %s is accessible by other users (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	var tf tokenFile
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tf); err != nil {
		return nil, fileStamp{}, fmt.Errorf("read token file %s: %w", path, err)
	}
	if tf.Version != 1 {
		return nil, fileStamp{}, fmt.Errorf("token file %s: unsupported version %d", path, tf.Version)
	}
	return tf.Tokens, stampOf(fi), nil
}

func writeFileAtomic(path string, tokens []Token) error {
	if tokens == nil {
		tokens = []Token{}
	}
	b, err := json.MarshalIndent(tokenFile{Version: 1, Tokens: tokens}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode tokens: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tokens-*.json")
	if err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write token file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace token file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func statFile(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return stampOf(fi), nil
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi), mode: fi.Mode()}
}
