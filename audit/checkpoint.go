package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Checkpoint is a signed statement that the chain had Hash at position Seq. The store
// writes one every Options.CheckpointEvery records and on Close, into the checkpoints
// table and into the audit.checkpoint file. Keep copies elsewhere: a checkpoint an
// auditor saved detects a rewritten or truncated chain even if the store's own copies
// and the key were replaced.
type Checkpoint struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
	// Time is when it was signed: the time of the record at Seq, canonical layout.
	Time string `json:"time"`
	// KeyID is the first 16 hex digits of SHA-256 over the raw 32-byte public key.
	KeyID string `json:"key_id"`
	// Signature is the base64 (standard, padded) ed25519 signature of Message().
	Signature string `json:"signature"`

	timeNS int64
}

// Message returns the exact bytes that are signed:
//
//	cmdgate-audit-checkpoint v1\n
//	seq <seq>\n
//	hash <hash>\n
//	time <time>\n
func (c Checkpoint) Message() []byte {
	b := []byte("cmdgate-audit-checkpoint v1\nseq ")
	b = strconv.AppendInt(b, c.Seq, 10)
	b = append(b, "\nhash "...)
	b = append(b, c.Hash...)
	b = append(b, "\ntime "...)
	b = append(b, c.Time...)
	return append(b, '\n')
}

// VerifySignature checks the checkpoint's signature with pub.
func (c Checkpoint) VerifySignature(pub ed25519.PublicKey) bool {
	sig, err := base64.StdEncoding.DecodeString(c.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize || len(pub) != ed25519.PublicKeySize {
		return false
	}
	return ed25519.Verify(pub, c.Message(), sig)
}

func (s *Store) sign(seq int64, hash string, timeNS int64) Checkpoint {
	c := Checkpoint{Seq: seq, Hash: hash, Time: formatTime(timeNS), KeyID: KeyID(s.pub), timeNS: timeNS}
	c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, c.Message()))
	return c
}

// KeyID names a public key: the first 16 hex digits of SHA-256 over its 32 bytes.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// PublicKey returns the store's checkpoint public key, nil when a read-only store has
// no key file.
func (s *Store) PublicKey() ed25519.PublicKey { return s.pub }

// MarshalPublicKey encodes pub as a PEM "PUBLIC KEY" block (PKIX), the form `openssl
// pkey -pubin` reads.
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePublicKey decodes a PEM "PUBLIC KEY" block holding an ed25519 key.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("parse public key: no PEM PUBLIC KEY block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("parse public key: %T is not an ed25519 key", k)
	}
	return pub, nil
}

// loadOrCreateKey reads the private key, or creates it (mode 0600) on first open. Two
// processes creating it at once agree on one key: the file appears atomically (link of
// a complete temporary file) and the loser reads the winner's.
func loadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	if k, err := readPrivateKey(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate checkpoint key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	tmp, err := os.CreateTemp(filepath.Dir(path), ".audit.key.*")
	if err != nil {
		return nil, fmt.Errorf("create checkpoint key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		tmp.Close()
		return nil, fmt.Errorf("create checkpoint key: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create checkpoint key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create checkpoint key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("create checkpoint key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create checkpoint key: %w", err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return readPrivateKey(path)
}

func readPrivateKey(path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("read checkpoint key %s: no PEM PRIVATE KEY block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("read checkpoint key %s: %T is not an ed25519 key", path, k)
	}
	return priv, nil
}

// readPublicKey reads the public half of the key file (read-only stores).
func readPublicKey(path string) (ed25519.PublicKey, error) {
	priv, err := readPrivateKey(path)
	if err != nil {
		return nil, err
	}
	return priv.Public().(ed25519.PublicKey), nil
}

// writeCheckpointFile replaces audit.checkpoint atomically (temporary file, fsync,
// rename) with c.
func writeCheckpointFile(dir string, c Checkpoint) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".audit.checkpoint.*")
	if err != nil {
		return fmt.Errorf("write checkpoint file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(data, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, CheckpointFile))
	}
	if err != nil {
		return fmt.Errorf("write checkpoint file: %w", err)
	}
	return syncDir(dir)
}

// ReadCheckpointFile reads a checkpoint saved as JSON (audit.checkpoint, or a copy an
// auditor kept from `cmdgate audit verify`).
func ReadCheckpointFile(path string) (Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint: %w", err)
	}
	c, err := parseCheckpoint(data)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	return c, nil
}
