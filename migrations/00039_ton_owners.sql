-- +goose Up
-- TON (issue 41; operations.md §9): a TON wallet is owned like any
-- registered address. Its memo payments use the columns of 00038: the
-- memo is the jetton transfer's comment.
ALTER TABLE address_owners DROP CONSTRAINT address_owners_family_check;
ALTER TABLE address_owners ADD CONSTRAINT address_owners_family_check CHECK (family IN ('evm', 'tron', 'solana', 'ton'));

-- +goose Down
DELETE FROM address_owners WHERE family = 'ton';
ALTER TABLE address_owners DROP CONSTRAINT address_owners_family_check;
ALTER TABLE address_owners ADD CONSTRAINT address_owners_family_check CHECK (family IN ('evm', 'tron', 'solana'));
