package main

import (
	"flag"
	"io"
	"strconv"
	"strings"

	"github.com/paywatch/paywatch/workflows"
)

// temporalSearchQuery is `paywatch admin temporal-search`: the visibility
// query that finds a customer's or an order's payments, whose search
// attributes hold keyed hashes (workflows.SearchRef) under a key derived
// from masterKey. It asks nothing of the service: the hash is computed
// here, so the reference never travels.
//
// With clear (PAYWATCH_TEMPORAL_CLEAR_REFS=true) the query names the
// values themselves. Payments created from a payment link have the
// external_ref link:<slug>:<buyer e-mail>, and payments created before
// issue 42 show their references in clear.
func temporalSearchQuery(args []string, masterKey string, clear bool) (string, error) {
	fs := flag.NewFlagSet("temporal-search", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ref := fs.String("external-ref", "", "")
	order := fs.String("external-order-id", "", "")
	if err := fs.Parse(args); err != nil {
		return "", usageError{err.Error()}
	}
	if fs.NArg() > 0 || (*ref == "" && *order == "") {
		return "", usageError{"temporal-search takes --external-ref, --external-order-id or both"}
	}
	key := workflows.DeriveSearchRefKey(masterKey)
	shown := func(v string) string { return workflows.SearchRef(key, v) }
	if clear {
		// PAYWATCH_TEMPORAL_CLEAR_REFS=true: the attributes hold the values.
		shown = func(v string) string { return v }
	}
	var terms []string
	if *ref != "" {
		terms = append(terms, workflows.SearchAttrExternalRef.GetName()+` = `+strconv.Quote(shown(*ref)))
	}
	if *order != "" {
		terms = append(terms, workflows.SearchAttrExternalOrderID.GetName()+` = `+strconv.Quote(shown(*order)))
	}
	return strings.Join(terms, " AND "), nil
}
