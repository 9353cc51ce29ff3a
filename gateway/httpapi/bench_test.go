package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// BenchmarkDecideHTTP is one POST /v1/decide over real HTTP on 127.0.0.1: body
// decoding, authentication, parse, policy evaluation and the durable (fsync'd) audit
// append of the decision record.
func BenchmarkDecideHTTP(b *testing.B) {
	benchPost(b, "/v1/decide", []byte(`{"command":"grep -rn TODO src | head -20 && go test ./..."}`))
}

// BenchmarkExecHTTP is one POST /v1/exec of `true` run directly: the decide pipeline
// plus starting and reaping the process and appending the execution record.
func BenchmarkExecHTTP(b *testing.B) {
	benchPost(b, "/v1/exec", []byte(`{"argv":["true"],"shell_mode":"direct"}`))
}

func benchPost(b *testing.B, path string, body []byte) {
	env := newEnv(b)
	client := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest("POST", env.url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", env.tokens["agent"])
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: %d", path, resp.StatusCode)
		}
	}
}
