package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/cmdgate/cmdgate/audit"
)

// The gateway's use: append the decision durably before running anything, then the
// execution; auditors query and verify.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "audit-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := audit.Open(ctx, dir, audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close(ctx)

	decision, err := store.Append(ctx, audit.Record{
		Kind:      audit.KindDecision,
		Principal: audit.Principal{Name: "ci-agent", Role: "agent"},
		RequestID: "req-1",
		Input:     json.RawMessage(`{"request":{"raw":"GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz make release"}}`),
		Decision:  "allow",
		Revision:  "rev-1",
	})
	if err != nil {
		log.Fatal(err) // fail closed: nothing runs without a durable decision record
	}
	// ... run the command, then record what happened.
	_, err = store.Append(ctx, audit.Record{
		Kind:       audit.KindExecution,
		Principal:  decision.Principal,
		RequestID:  "req-1",
		DecisionID: decision.ID,
		Execution:  &audit.Execution{ExitCode: 0, DurationMS: 1200, StdoutBytes: 512},
	})
	if err != nil {
		log.Fatal(err)
	}

	page, err := store.Query(ctx, audit.Query{Principal: "ci-agent", Kind: audit.KindDecision})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Records[0].Seq, string(page.Records[0].Input))

	res, err := store.Verify(ctx, audit.VerifyOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.OK, res.Records)
	// Output:
	// 1 {"request":{"raw":"GITHUB_TOKEN=**** make release"}}
	// true 2
}
