package solana

import (
	"fmt"

	sol "github.com/gagliardetto/solana-go"
)

// AssociatedTokenAccount returns the associated token account of owner
// for mint under program (SPL Token or Token-2022): the program-derived
// address of [owner, program, mint] under the Associated Token Account
// program (solana-program/associated-token-account, get_associated_token_address_with_program_id).
// It is derived here, never asked of a provider, so a provider cannot
// point the scanner at an account that is not the wallet's.
func AssociatedTokenAccount(owner, mint, program string) (string, error) {
	o, err := sol.PublicKeyFromBase58(owner)
	if err != nil {
		return "", fmt.Errorf("solana: owner %q: %w", owner, err)
	}
	m, err := sol.PublicKeyFromBase58(mint)
	if err != nil {
		return "", fmt.Errorf("solana: mint %q: %w", mint, err)
	}
	p, err := sol.PublicKeyFromBase58(program)
	if err != nil {
		return "", fmt.Errorf("solana: token program %q: %w", program, err)
	}
	if !p.Equals(sol.TokenProgramID) && !p.Equals(sol.Token2022ProgramID) {
		return "", fmt.Errorf("solana: %s is not a token program", program)
	}
	ata, _, err := sol.FindProgramAddress([][]byte{o[:], p[:], m[:]}, sol.SPLAssociatedTokenAccountProgramID)
	if err != nil {
		return "", fmt.Errorf("solana: associated token account of %s for %s: %w", owner, mint, err)
	}
	return ata.String(), nil
}
