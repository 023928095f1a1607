package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/ledger"
)

// maxHashInput bounds what `hash` reads from stdin: a payload is a few
// fields, and a runaway pipe must not fill the memory.
const maxHashInput = 1 << 20

// newHashCmd is `sweeper hash [JSON]`: the payload hash of a JSON document
// — ledger.PayloadHash, the function the JavaScript snippet and the test
// vectors agree with — from the argument, or from stdin without one (or
// with "-"). Invalid JSON is bad input: exit 2, said without the usage.
func newHashCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hash [JSON]",
		Short: "print the payload hash of a JSON document (argument or stdin)",
		Long: "hash prints the payload hash of a JSON document — SHA-256, lowercase hex, of its canonical\n" +
			"form (docs/ledger.md, \"Payload hash\") — the value a workflow writes into ledger.operations.payload_hash.\n" +
			"The document is the argument, or stdin when there is none or it is \"-\".\n" +
			"--canonical prints the canonical form instead, to compare with what a workflow hashed.",
		Example: `  sweeper hash '{"to":"a@example.com","template":"welcome","locale":"en"}'
  jq -c '{body}' message.json | sweeper hash`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("unexpected argument %q: quote the JSON as one argument", args[1])
			}
			return nil
		},
	}
	canonical := cmd.Flags().Bool("canonical", false, "print the canonical JSON instead of its hash")
	cmd.RunE = runE(func(_ *cobra.Command, args []string) error {
		var doc []byte
		if len(args) == 1 && args[0] != "-" {
			doc = []byte(args[0])
		} else {
			b, err := io.ReadAll(io.LimitReader(e.stdin, maxHashInput+1))
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			if len(b) > maxHashInput {
				return &exitError{exitUsage, fmt.Errorf("stdin holds more than %d bytes: not a payload", maxHashInput)}
			}
			doc = b
		}
		if strings.TrimSpace(string(doc)) == "" {
			return &exitError{exitUsage, errors.New("no JSON: pass the document as an argument or on stdin")}
		}
		if *canonical {
			c, err := ledger.Canonicalize(doc)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			fmt.Fprintln(e.stdout, string(c))
			return nil
		}
		h, err := ledger.PayloadHash(doc)
		if err != nil {
			return &exitError{exitUsage, err}
		}
		fmt.Fprintln(e.stdout, h)
		return nil
	})
	noConfig(cmd)
	return cmd
}
