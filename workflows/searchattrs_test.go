package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
)

// Issue 42, item 2: on a namespace where paywatch may not add its search
// attributes (Temporal Cloud), start-up stops with one message that names
// every attribute to add, rename or remove, with its type, and the
// commands that do it: tcld's `namespace search-attributes add --namespace
// NS --search-attribute "Name=Type"` (temporalio/tcld app/namespace.go)
// and the temporal CLI's `operator search-attribute create --name N --type
// T`. The text is the operator's only guide, so it is pinned here whole.
func TestSearchAttributeMessages(t *testing.T) {
	denied := serviceerror.NewPermissionDenied("Request unauthorized.", "")
	cases := []struct {
		name string
		p    searchAttributeProblem
		want string
	}{
		{"refused to add", searchAttributeProblem{namespace: "shop.a1b2c", missing: []string{"ExternalOrderId", "ExternalRef"}, refused: denied}, `namespace shop.a1b2c does not have the search attributes paywatch needs:
  ExternalOrderId (Keyword) is missing
  ExternalRef (Keyword) is missing
Temporal refused to add them (PermissionDenied: Request unauthorized.). Run these, then start paywatch again. On Temporal Cloud:
  tcld namespace search-attributes add --namespace shop.a1b2c --search-attribute "ExternalOrderId=Keyword" --search-attribute "ExternalRef=Keyword"
On a self-hosted server:
  temporal operator search-attribute create --namespace shop.a1b2c --name ExternalOrderId --type Keyword --name ExternalRef --type Keyword`},

		{"wrong type", searchAttributeProblem{namespace: "default", wrong: map[string]enumspb.IndexedValueType{"ExternalRef": enumspb.INDEXED_VALUE_TYPE_TEXT}}, `namespace default does not have the search attributes paywatch needs:
  ExternalRef is Text, and must be Keyword: a search attribute's type cannot change, so rename it (Temporal Cloud) or remove it
Run these, then start paywatch again. On Temporal Cloud:
  tcld namespace search-attributes rename --namespace default --existing-name ExternalRef --new-name ExternalRefText
  tcld namespace search-attributes add --namespace default --search-attribute "ExternalRef=Keyword"
On a self-hosted server:
  temporal operator search-attribute remove --namespace default --name ExternalRef --yes
  temporal operator search-attribute create --namespace default --name ExternalRef --type Keyword`},

		{"refused, and a wrong type", searchAttributeProblem{namespace: "ns", missing: []string{"Token"}, refused: serviceerror.NewUnimplemented("not here"),
			wrong: map[string]enumspb.IndexedValueType{"Network": enumspb.INDEXED_VALUE_TYPE_INT, "ExternalRef": enumspb.INDEXED_VALUE_TYPE_TEXT}}, `namespace ns does not have the search attributes paywatch needs:
  ExternalRef is Text, and must be Keyword: a search attribute's type cannot change, so rename it (Temporal Cloud) or remove it
  Network is Int, and must be Keyword: a search attribute's type cannot change, so rename it (Temporal Cloud) or remove it
  Token (Keyword) is missing
Temporal refused to add them (Unimplemented: not here). Run these, then start paywatch again. On Temporal Cloud:
  tcld namespace search-attributes rename --namespace ns --existing-name ExternalRef --new-name ExternalRefText
  tcld namespace search-attributes rename --namespace ns --existing-name Network --new-name NetworkInt
  tcld namespace search-attributes add --namespace ns --search-attribute "ExternalRef=Keyword" --search-attribute "Network=Keyword" --search-attribute "Token=Keyword"
On a self-hosted server:
  temporal operator search-attribute remove --namespace ns --name ExternalRef --name Network --yes
  temporal operator search-attribute create --namespace ns --name ExternalRef --type Keyword --name Network --type Keyword --name Token --type Keyword`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.p.Error())
		})
	}
}

// A refused listing says so, and names every attribute paywatch needs,
// since it cannot tell which are missing.
func TestSearchAttributeListRefused(t *testing.T) {
	err := listRefused("shop.a1b2c", serviceerror.NewPermissionDenied("Request unauthorized.", ""))
	assert.Equal(t, `Temporal refused to list the search attributes of namespace shop.a1b2c (PermissionDenied: Request unauthorized.), so paywatch cannot check them: check that the API key or certificate may use the namespace. paywatch needs:
  ExternalOrderId (Keyword)
  ExternalRef (Keyword)
  Network (Keyword)
  PaymentStatus (Keyword)
  ProjectSlug (Keyword)
  Token (Keyword)
Where they are missing, run these (naming only those), then start paywatch again. On Temporal Cloud:
  tcld namespace search-attributes add --namespace shop.a1b2c --search-attribute "ExternalOrderId=Keyword" --search-attribute "ExternalRef=Keyword" --search-attribute "Network=Keyword" --search-attribute "PaymentStatus=Keyword" --search-attribute "ProjectSlug=Keyword" --search-attribute "Token=Keyword"
On a self-hosted server:
  temporal operator search-attribute create --namespace shop.a1b2c --name ExternalOrderId --type Keyword --name ExternalRef --type Keyword --name Network --type Keyword --name PaymentStatus --type Keyword --name ProjectSlug --type Keyword --name Token --type Keyword`, err.Error())
	var denied *serviceerror.PermissionDenied
	assert.True(t, errors.As(err, &denied), "the server's answer stays in the chain")

	err = listRefused("shop", serviceerror.NewNamespaceNotFound("shop"))
	assert.Contains(t, err.Error(), "namespace shop does not exist on this Temporal server (TEMPORAL_NAMESPACE)")
	err = listRefused("shop", serviceerror.NewUnavailable("connection refused"))
	assert.Equal(t, "list the search attributes of namespace shop: connection refused", err.Error())
}
