package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// defaultURL is where the client subcommands look for the gateway when neither --url
// nor CMDGATE_URL says otherwise: `cmdgate serve`'s default address.
const defaultURL = "http://127.0.0.1:8080"

// maxAnswerBytes bounds a gateway answer the client reads (two streams of at most
// 1 000 000 characters of up to 4 bytes each, JSON-escaped, fit well within it).
const maxAnswerBytes = 64 << 20

// gatewayClient talks to a cmdgate gateway over HTTP for the client subcommands
// (exec, decide --url): the URL from --url, CMDGATE_URL or defaultURL; the token from
// CMDGATE_TOKEN or a --token-file (never a flag value: other users can read argv).
type gatewayClient struct {
	base  *url.URL
	token string
	http  *http.Client
}

// newClient resolves the gateway URL and the token.
func (m *Main) newClient(urlFlag, tokenFile string) (*gatewayClient, error) {
	raw := urlFlag
	if raw == "" {
		raw = m.Getenv("CMDGATE_URL")
	}
	if raw == "" {
		raw = defaultURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway URL %q must be http://HOST:PORT or https://HOST:PORT", raw)
	}
	token, err := m.token(tokenFile)
	if err != nil {
		return nil, err
	}
	// No overall timeout: a command may run for minutes, and the gateway bounds it.
	// Connecting and waiting for headers are bounded by the transport's defaults.
	return &gatewayClient{base: u, token: token, http: &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
	}}}, nil
}

// token is the API token: the content of tokenFile when given, else $CMDGATE_TOKEN
// (never a flag value: other users can read argv).
func (m *Main) token(tokenFile string) (string, error) {
	if tokenFile == "" {
		return m.Getenv("CMDGATE_TOKEN"), nil
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// errUnreachable wraps failures to get any answer from the gateway.
var errUnreachable = errors.New("cannot reach the gateway")

// call sends a JSON body (nil for none) and returns the status and the body of the
// gateway's answer. An error means there was no answer (errUnreachable) or the answer
// was not JSON.
func (c *gatewayClient) call(ctx context.Context, method, path string, query url.Values, body any) (int, json.RawMessage, error) {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, nil, fmt.Errorf("%w at %s: %v", errUnreachable, c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%w at %s: %v", errUnreachable, c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("%w at %s: reading the answer: %v", errUnreachable, c.base, err)
	}
	if len(b) > maxAnswerBytes {
		return resp.StatusCode, nil, fmt.Errorf("the gateway's answer is larger than %d bytes", maxAnswerBytes)
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) || len(b) == 0 || b[0] != '{' {
		return resp.StatusCode, nil, fmt.Errorf("the gateway answered HTTP %d without a JSON object: is %s a cmdgate gateway?", resp.StatusCode, c.base)
	}
	return resp.StatusCode, b, nil
}

// writeAnswer prints the gateway's answer inside the CLI envelope: a 2xx answer's
// members after {"schema_version","ok":true,"type"}; an error answer (and a 2xx one
// made of an error object: 202 APPROVAL_PENDING, nothing ran) as ok false with the
// gateway's error object (code, message, decision_id, reasons, approval_id, ...). Both
// exit 0: the gateway answered. http_status is added to both.
func (m *Main) writeAnswer(typ string, status int, body json.RawMessage) int {
	var b bytes.Buffer
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if status >= 200 && status < 300 && (json.Unmarshal(body, &probe) != nil || len(probe.Error) == 0) {
		fmt.Fprintf(&b, `{"schema_version":%d,"ok":true,"type":%q,"http_status":%d`, schemaVersion, typ, status)
		if inner := bytes.TrimSpace(body[1:]); len(inner) > 1 {
			b.WriteByte(',')
			b.Write(inner)
		} else {
			b.WriteByte('}')
		}
	} else {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || len(e.Error) == 0 || e.Error[0] != '{' {
			return m.writeError(typ, "INTERNAL", fmt.Sprintf("the gateway answered HTTP %d without an error object", status))
		}
		fmt.Fprintf(&b, `{"schema_version":%d,"ok":false,"type":%q,"http_status":%d,"error":`, schemaVersion, typ, status)
		b.Write(e.Error)
		b.WriteByte('}')
		var msg struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		json.Unmarshal(e.Error, &msg)
		fmt.Fprintf(m.Stderr, "cmdgate %s: %s: %s\n", typ, msg.Code, msg.Message)
	}
	b.WriteByte('\n')
	m.Stdout.Write(b.Bytes())
	return exitOK
}

// clientFailed prints a failure to get an answer: UNAVAILABLE when the gateway could
// not be reached, INTERNAL for an answer that is not the gateway's.
func (m *Main) clientFailed(typ string, err error) int {
	code := "INTERNAL"
	if errors.Is(err, errUnreachable) {
		code = "UNAVAILABLE"
	}
	return m.writeError(typ, code, err.Error())
}
