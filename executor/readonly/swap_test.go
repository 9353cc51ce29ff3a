package readonly_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cmdgate/cmdgate/executor/readonly"
)

// TestSymlinkSwap races Open and Run against a goroutine that swaps what a name
// points to between an allowed file and a secret one: the secret must never be read.
func TestSymlinkSwap(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-b6f1c0de"
	const iterations = 2000

	// The last component: a symbolic link swapped (atomically, by rename) between the
	// two files.
	t.Run("file", func(t *testing.T) {
		t.Parallel()
		root := realDir(t)
		allowed := filepath.Join(root, "allowed")
		writeFile(t, allowed, "public.txt", "public\n")
		secretFile := writeFile(t, root, "outside/secret.txt", secret+"\n")
		link := filepath.Join(allowed, "link")
		symlink(t, "public.txt", link)
		a := allowlist(t, allowed+"/")
		race(t, a, allowed, "link", secret, iterations, func(i int) {
			target := "public.txt"
			if i%2 == 1 {
				target = secretFile
			}
			tmp := filepath.Join(allowed, ".swap")
			os.Remove(tmp)
			if err := os.Symlink(target, tmp); err == nil {
				os.Rename(tmp, link)
			}
		})
	})

	// A directory of the path: a real directory swapped with a link to a directory
	// outside, and back, by renames. O_NOFOLLOW does not cover it: the checks after
	// the open must.
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		root := realDir(t)
		allowed := filepath.Join(root, "allowed")
		writeFile(t, allowed, "d/f", "public\n")
		writeFile(t, root, "outside/d/f", secret+"\n")
		d := filepath.Join(allowed, "d")
		symlink(t, filepath.Join(root, "outside/d"), filepath.Join(allowed, "d.link"))
		a := allowlist(t, allowed+"/")
		race(t, a, allowed, "d/f", secret, iterations, func(i int) {
			if i%2 == 0 {
				os.Rename(d, d+".real")
				os.Rename(d+".link", d)
			} else {
				os.Rename(d, d+".link")
				os.Rename(d+".real", d)
			}
		})
	})
}

// race calls swap in a loop while it runs `cat name` in dir iterations times, and
// fails if the output ever holds secret.
func race(t *testing.T, a *readonly.Allowlist, dir, name, secret string, iterations int, swap func(i int)) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				swap(i)
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	p, err := readonly.Parse("cat " + name)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for range iterations {
		f, err := a.Open(dir, p.File)
		if err != nil {
			continue // refused, missing mid-swap, or changed while opened
		}
		out, err := readonly.Run(context.Background(), p, f)
		f.Close()
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("Open+Run(%q) returned the secret (%s)", name, f.Path())
		}
		if err == nil {
			read++
		}
	}
	t.Logf("%d of %d reads succeeded", read, iterations)
}
