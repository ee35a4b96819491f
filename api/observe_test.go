package api_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/paywatch/paywatch/api"
)

// Every answered request is reported with its route pattern, never the raw
// path, and the status code the client got, errors included.
func TestRequestsAreObservedByRoute(t *testing.T) {
	type seen struct {
		route string
		code  int
	}
	var mu sync.Mutex
	var got []seen
	s := api.New(api.Deps{
		BaseURL: "http://api.test",
		Devnet: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
		}),
		ObserveRequest: func(route string, code int, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			assert.GreaterOrEqual(t, took, time.Duration(0))
			got = append(got, seen{route, code})
		},
	})
	for _, target := range []string{"http://api.test/devnet/transfers", "http://api.test/no-such-route", "http://other.test/devnet"} {
		s.API().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, target, nil))
	}
	assert.Equal(t, []seen{
		{"/devnet/*", http.StatusCreated},
		{"", http.StatusNotFound},
		{"", http.StatusNotFound}, // refused by the host rule
	}, got)
}
