// Package paywatch is the domain core of the paywatch payment monitor:
// networks and tokens, exact token amounts, the status rule, HD address
// derivation, address and hash formats, QR codes and webhook signatures.
//
// It does no I/O. Every other package builds on it, and merchants may import
// it to verify webhook signatures.
package paywatch
