package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	secret, tok, err := s.Create("ci-agent", RoleAgent)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if !strings.HasPrefix(secret, tokenPrefix) || len(secret) < 40 {
		t.Fatalf("secret %q: want %s prefix and 256 bits", secret, tokenPrefix)
	}
	got, ok := s.Authenticate(secret)
	if !ok || got.Name != "ci-agent" || got.Role != RoleAgent || got.ID != tok.ID {
		t.Fatalf("Authenticate(secret) = %+v, %v; want ci-agent agent", got, ok)
	}
	for _, bad := range []string{"", "cmdgate_", secret + "x", secret[:len(secret)-1], strings.ToUpper(secret), "Bearer " + secret, strings.Repeat("a", 10000)} {
		if _, ok := s.Authenticate(bad); ok {
			t.Errorf("Authenticate(%q) succeeded", bad)
		}
	}
	if _, _, err := s.Create("ci-agent", RoleAuditor); !errors.Is(err, ErrTokenExists) {
		t.Errorf("Create(duplicate name) = %v, want ErrTokenExists", err)
	}

	// The secret never reaches the disk; the file is private.
	b, err := os.ReadFile(filepath.Join(dir, TokensFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(secret[len(tokenPrefix):])) {
		t.Fatal("token file contains the secret")
	}
	fi, _ := os.Stat(filepath.Join(dir, TokensFile))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}

	// Another process (here: another store on the same directory) sees revocation.
	other, err := OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Revoke("ci-agent"); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if _, ok := s.Authenticate(secret); ok {
		t.Fatal("revoked token still authenticates")
	}
	if _, err := other.Revoke("ci-agent"); !errors.Is(err, ErrTokenNotFound) {
		t.Errorf("Revoke(revoked) = %v, want ErrTokenNotFound", err)
	}
	// The name is free again after revocation.
	if _, _, err := s.Create("ci-agent", RoleAgent); err != nil {
		t.Errorf("Create after revoke: %v", err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || !list[0].Revoked() || list[1].Revoked() {
		t.Errorf("List() = %+v, %v; want one revoked and one live token", list, err)
	}
}

func TestTokenValidation(t *testing.T) {
	t.Parallel()
	s, err := OpenTokens(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		role Role
	}{
		{"", RoleAgent},
		{strings.Repeat("n", 65), RoleAgent},
		{"has space", RoleAgent},
		{"nul\x00byte", RoleAgent},
		{"../escape", RoleAgent},
		{"ok", "root"},
		{"ok", ""},
	} {
		if _, _, err := s.Create(tc.name, tc.role); err == nil {
			t.Errorf("Create(%q, %q) succeeded, want an error", tc.name, tc.role)
		}
	}
	if n, err := s.Live(); err != nil || n != 0 {
		t.Errorf("Live() = %d, %v after only invalid creates; want 0", n, err)
	}
}

// Concurrent writers on one directory (separate stores, as separate CLI processes
// would be) lose no update: the lock file serialises them.
func TestTokenConcurrentCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const stores, each = 4, 10
	var wg sync.WaitGroup
	secrets := make(chan string, stores*each)
	for i := range stores {
		s, err := OpenTokens(dir)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				secret, _, err := s.Create(fmt.Sprintf("agent-%d-%d", i, j), RoleAgent)
				if err != nil {
					t.Error(err)
					return
				}
				secrets <- secret
			}
		}()
	}
	wg.Wait()
	close(secrets)
	s, err := OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Live(); n != stores*each {
		t.Fatalf("Live() = %d, want %d", n, stores*each)
	}
	for secret := range secrets {
		if _, ok := s.Authenticate(secret); !ok {
			t.Errorf("token lost: %q does not authenticate", secret)
		}
	}
}

// A damaged or exposed token file denies everything instead of guessing.
func TestTokenFileFailsClosed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenTokens(dir)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := s.Create("a", RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, TokensFile)

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(secret); ok {
		t.Error("authenticated from a world-readable token file")
	}
	if _, err := OpenTokens(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("OpenTokens(world-readable) = %v, want a chmod hint", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Authenticate(secret); !ok {
		t.Fatal("token does not authenticate after chmod 600")
	}

	for _, garbage := range []string{"{", `{"version":1,"tokens":[],"extra":1}`, `{"version":9,"tokens":[]}`, "\x00\xff"} {
		if err := os.WriteFile(path, []byte(garbage), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := s.Authenticate(secret); ok {
			t.Errorf("authenticated from token file %q", garbage)
		}
		if _, err := OpenTokens(dir); err == nil {
			t.Errorf("OpenTokens(%q) succeeded", garbage)
		}
	}
}

// BenchmarkTokenCheck is an authentication (every request's) against a store of one
// token and of 200 (an agent each), the secret the last one's.
func BenchmarkTokenCheck(b *testing.B) {
	for _, n := range []int{1, 200} {
		b.Run(fmt.Sprintf("tokens_%d", n), func(b *testing.B) {
			dir := b.TempDir()
			tokens := make([]Token, n)
			var secret string
			for i := range tokens {
				secret = fmt.Sprintf("%s%043d", tokenPrefix, i)
				tokens[i] = Token{ID: fmt.Sprintf("%016x", i), Name: fmt.Sprintf("agent-%d", i), Role: RoleAgent,
					Hash: hashSecret(secret), CreatedAt: time.Now().UTC().Truncate(time.Second)}
			}
			if err := writeFileAtomic(filepath.Join(dir, TokensFile), tokens); err != nil {
				b.Fatal(err)
			}
			s, err := OpenTokens(dir)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Check(secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
