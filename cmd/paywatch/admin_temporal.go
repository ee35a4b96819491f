package main

import (
	"flag"
	"io"
	"strings"

	"github.com/paywatch/paywatch/workflows"
)

// temporalSearchQuery is `paywatch admin temporal-search`: the visibility
// query that finds a customer's or an order's payments, whose search
// attributes hold keyed hashes (workflows.SearchRef) under a key derived
// from masterKey. It asks nothing of the service: the hash is computed
// here, so the reference never travels.
func temporalSearchQuery(args []string, masterKey string) (string, error) {
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
	var terms []string
	if *ref != "" {
		terms = append(terms, workflows.SearchAttrExternalRef.GetName()+` = "`+workflows.SearchRef(key, *ref)+`"`)
	}
	if *order != "" {
		terms = append(terms, workflows.SearchAttrExternalOrderID.GetName()+` = "`+workflows.SearchRef(key, *order)+`"`)
	}
	return strings.Join(terms, " AND "), nil
}
