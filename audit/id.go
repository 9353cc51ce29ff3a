package audit

import (
	"crypto/rand"
	"errors"
)

// Record ids follow the ULID layout: 128 bits, the first 48 the Unix time in
// milliseconds, the other 80 random, written as 26 characters of Crockford base32, so
// that ids sort as their times do. The writer derives each id from the previous one
// (nextID), which makes ids strictly increasing along the chain even when the clock
// stalls or several processes append.

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

type id128 struct{ hi, lo uint64 } // hi: 48-bit ms << 16 | top 16 random bits

var errBadID = errors.New("malformed record id")

func (a id128) less(b id128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a id128) ms() uint64 { return a.hi >> 16 }

// nextID returns an id for a record appended at unix millisecond ms after prev (the
// zero id128 when the chain is empty): a fresh random id when ms is later than prev's
// time, prev+1 otherwise.
func nextID(prev id128, ms uint64) id128 {
	if ms > prev.ms() {
		var b [10]byte
		rand.Read(b[:]) // never returns an error (crypto/rand docs)
		return id128{
			hi: ms<<16 | uint64(b[0])<<8 | uint64(b[1]),
			lo: uint64(b[2])<<56 | uint64(b[3])<<48 | uint64(b[4])<<40 | uint64(b[5])<<32 |
				uint64(b[6])<<24 | uint64(b[7])<<16 | uint64(b[8])<<8 | uint64(b[9]),
		}
	}
	n := id128{prev.hi, prev.lo + 1}
	if n.lo == 0 {
		n.hi++ // carry; in the (theoretical) overflow the time part moves 1 ms ahead
	}
	return n
}

// String encodes the id as 26 Crockford base32 characters.
func (a id128) String() string {
	var out [26]byte
	// 128 bits → 26 digits of 5 bits, the first holding the top 3 bits.
	hi, lo := a.hi, a.lo
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

var crockfordValue = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := range len(crockford) {
		t[crockford[i]] = int8(i)
	}
	return t
}()

// parseID decodes an id written by String (uppercase only, as the store writes them).
func parseID(s string) (id128, error) {
	if len(s) != 26 {
		return id128{}, errBadID
	}
	if crockfordValue[s[0]] > 7 {
		return id128{}, errBadID // more than 128 bits
	}
	var a id128
	for i := range 26 {
		v := crockfordValue[s[i]]
		if v < 0 {
			return id128{}, errBadID
		}
		a.hi = a.hi<<5 | a.lo>>59
		a.lo = a.lo<<5 | uint64(v)
	}
	return a, nil
}
