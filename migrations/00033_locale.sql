-- +goose Up
-- The buyer's language (issue 29): a merchant may give a payment or a
-- payment link a default language for its hosted pages (`locale` on
-- creation). NULL leaves the choice to the buyer's browser.
ALTER TABLE payments ADD COLUMN locale TEXT;
ALTER TABLE payment_links ADD COLUMN locale TEXT;
-- An account's language: its browser's at its latest sign-in. Mail to an
-- existing account (password reset, security alerts) speaks it, whoever
-- asked for the mail; NULL is English.
ALTER TABLE accounts ADD COLUMN locale TEXT;

-- +goose Down
ALTER TABLE accounts DROP COLUMN locale;
ALTER TABLE payment_links DROP COLUMN locale;
ALTER TABLE payments DROP COLUMN locale;
