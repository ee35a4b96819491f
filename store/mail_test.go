package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paywatch/paywatch/store"
)

// A key regeneration queues its alert in the same transaction: the keys
// never change without the e-mail, and a failed queue leaves the keys as
// they were. The reconciler's list holds only messages no delivery started.
func TestRegenerateKeysQueuesTheAlertAtomically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newStore(t)
	project(t, s, "shop", store.ProjectSettings{}, hdWallet())
	alert := func(p *store.Project) *store.Mail {
		return &store.Mail{To: p.Owner.Email, Subject: "Security alert: " + p.Name, Text: "regenerated"}
	}
	creds, m, err := s.RegenerateKeys(ctx, "shop", alert)
	require.NoError(t, err)
	require.NotNil(t, m)
	got, ok, err := s.MailByID(ctx, m.ID)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "shop@example.com", got.To)
	assert.False(t, got.Sent)

	// A mail that cannot be queued (here a constraint refuses new alerts)
	// rolls the regeneration back.
	_, err = s.Pool().Exec(ctx, `ALTER TABLE mail_messages ADD CONSTRAINT no_alerts CHECK (subject NOT LIKE 'Security alert%') NOT VALID`)
	require.NoError(t, err)
	_, _, err = s.RegenerateKeys(ctx, "shop", alert)
	require.Error(t, err)
	_, err = s.Authenticate(ctx, creds.APIKey)
	require.NoError(t, err, "the keys of the first regeneration still work")
	_, err = s.Pool().Exec(ctx, `ALTER TABLE mail_messages DROP CONSTRAINT no_alerts`)
	require.NoError(t, err)

	clk.Add(time.Minute)
	ids, err := s.PendingMail(ctx, 30*time.Second, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{m.ID}, ids)
	require.NoError(t, s.MarkMailStarted(ctx, m.ID))
	ids, err = s.PendingMail(ctx, 30*time.Second, 10)
	require.NoError(t, err)
	assert.Empty(t, ids, "a started delivery retries by itself")
}
