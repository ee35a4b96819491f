package paywatch

import "fmt"

// The catalogue of every message paywatch answers with: each is written
// here once and used by every edge and layer that gives it. The texts are
// exact (interface.md, operations.md); outside tests check them word for
// word. Those marked "paywatch's own" answer cases the contract names no
// message for.

// Messages of the HTTP layer (interface.md "Errors" and "Limits").
const (
	MsgInvalidRequestBody = "Invalid request body"
	MsgNotFound           = "Not found"
	MsgBodyTooLarge       = "Request body too large"
	MsgInternal           = "Internal server error"
	MsgMissingAPIKey      = "Missing x-api-key header"
	MsgInvalidAPIKey      = "Invalid API key"
	MsgInvalidMasterKey   = "Invalid master key"
	MsgRateLimit          = "Rate limit exceeded. Try again later."
	MsgDailyLimit         = "Daily API call limit exceeded. Upgrade your plan for unlimited access."
	MsgInvalidKeyFlood    = "Too many invalid API key attempts. Try again later."
	MsgTooManyRequests    = "Too many requests"
	MsgFailedCreate       = "Failed to create payment"
	MsgInvalidLimit       = "Invalid limit or offset"
	MsgInvalidStatus      = "Invalid status filter"
	MsgInvalidCreated     = "Invalid created_after"
	MsgInvalidUpdated     = "Invalid updated_after"
	MsgInvalidState       = "Invalid state filter" // paywatch's own: GET /v1/events
	// paywatch's own: GET /v1/transfers.
	MsgInvalidTransferFilter = "Invalid transfer filter"
	MsgInvalidCreatedBefore  = "Invalid created_before"
)

// Messages of things not found.
const (
	MsgPaymentNotFound = "Payment not found"
	MsgProjectNotFound = "Project not found"
	MsgAccountNotFound = "Account not found"
	MsgEventNotFound   = "Event not found"
	MsgLinkNotFound    = "Payment link not found" // paywatch's own
	// MsgTransferNotFound is paywatch's own (GET /v1/transfers/...).
	MsgTransferNotFound = "Transfer not found"
	// MsgTransferNotUnmatched refuses to mark handled a transfer that a
	// payment holds or may still take (paywatch's own).
	MsgTransferNotUnmatched = "Only unmatched transfers can be marked handled"
	// MsgInvalidNote refuses a handled mark's note over 500 characters.
	MsgInvalidNote = "Note must be at most 500 characters"
)

// Messages of creating a payment and assigning its address.
const (
	MsgNoWallet           = "Project has no wallet assigned"
	MsgNoXPub             = "Wallet has no xPub configured for this network"
	MsgNoAddressesCreate  = "No addresses available for this network. Contact merchant."
	MsgNoAddressesSelect  = "No addresses available for this network"
	MsgAddressNotInWallet = "Specified address does not belong to this project's wallet"
	MsgAddressOtherUser   = "This address is already assigned to a different customer"
	MsgCustomerHasAddress = "This customer already has a different address assigned on this network"
	MsgDifferentAmount    = "Payment already exists with different amount"
	MsgOrderOtherRef      = "external_order_id is already in use with a different external_ref"
	MsgOrderOtherPair     = "external_order_id is already in use with a different network or token"
	MsgInProgress         = "This customer already has a payment in progress on this network. Cancel it or wait for it to complete."
	MsgCapacity           = "Payment capacity exceeded. Please try again later."
	MsgNotAccepting       = "This merchant is currently not accepting payments"
	// MsgProjectMinimumFormat takes the project minimum as a display amount.
	MsgProjectMinimumFormat = "Amount must be at least $%s (project minimum)"
)

// Messages of a payment's own verdicts: cancel, select-network and
// submitted transaction hashes.
const (
	MsgNotPending           = "Payment is not in pending state"
	MsgNetworkSelected      = "Network already selected for this payment"
	MsgPaymentExpired       = "Payment has expired"
	MsgNetworkTokenRequired = "network and token are required"
	MsgCancelChanged        = "Payment status changed before cancellation could complete. Please refresh and try again."
	MsgFinalized            = "Payment already finalized"
	MsgHashPending          = "Transaction hash already submitted and pending confirmation"
	MsgTxHashClaimed        = "This transaction hash is already submitted for another payment"
	MsgNotTxidPayment       = "This payment does not accept transaction hashes"                   // paywatch's own
	MsgNoNetworkForHash     = "Select a network before submitting a transaction hash"             // paywatch's own
	MsgHashRequired         = "tx_hash is required"                                               // paywatch's own
	MsgHashBelowMinimum     = "Transaction amount is below the minimum accepted for this payment" // paywatch's own
	MsgHashNoTransfer       = "Transaction does not pay this payment's address"                   // paywatch's own
	MsgTxVerified           = "Transaction verified. Waiting for confirmations."
	MsgTxUnverified         = "Transaction not found on chain yet. It will be verified automatically."
	MsgNoNetworkToRecheck   = "Select a network before re-checking the chain"      // paywatch's own
	MsgRecheckFailed        = "The chain could not be read; try again in a minute" // paywatch's own
)

// MsgCancelRefused is the 409 of cancelling a payment whose shown status
// is st.
func MsgCancelRefused(st Status) string {
	return fmt.Sprintf("Cannot cancel payment with status %q. Only pending payments can be cancelled.", string(st))
}

// MsgNotAvailable is the 400 of a network and token the merchant does not
// offer.
func MsgNotAvailable(p Pair) string { return p.String() + " is not available for this merchant" }

// MsgPlanLimit is the 403 of creating one more of what the owner's plan
// counts: "Plan limit exceeded: the owner's plan allows 3 projects".
func MsgPlanLimit(limit int64, what string) string {
	if limit != 1 {
		what += "s"
	}
	return fmt.Sprintf("Plan limit exceeded: the owner's plan allows %d %s", limit, what)
}

// Messages of projects, wallets, links and webhooks (operations.md §2; the
// detailed ones are paywatch's own, on operator endpoints only).
const (
	MsgMicroDecimalsOpen = "micro_amount_decimals cannot be changed while payments are pending"
	MsgWebhookURLShape   = "webhook_url must be an absolute http or https URL"
	MsgWebhookURLPrivate = "webhook_url must not point to a private, reserved or loopback address"
	MsgWebhookURLHTTPS   = "webhook_url must be an https URL"
	MsgNoOwnerWarning    = "No owner_email given: the project has no owner and its API key does not work until one is set (PATCH /v1/projects/{slug} with owner_email)."
	MsgTelegramOff       = "Chat notifications are off: the operator has not set PAYWATCH_TELEGRAM_BOT_TOKEN"
	MsgChatID            = "telegram_chat_id must be a Telegram chat id (digits, a leading minus for groups) or a channel's @username"
	MsgProtectionKeyNull = "protection_key can only be null, which removes the account's protection key"
	MsgBadLimit          = "limits must map projects, wallets, payment_links, api_calls_per_day, webhooks_per_day or chat_notifications_per_day to a whole number (-1 for unlimited) or null"
	MsgLinkSlugTaken     = "A payment link with this slug already exists"
	MsgLinkTitle         = "title is required (at most 200 characters)"
	MsgLinkNeedsOwner    = "The project has no owner: payment links count against the owner's plan, so set owner_email first"
	MsgWalletInUse       = "Wallet has payments in progress; delete it once they are resolved"
	// MsgModePending is the 409 of an address mode or pool matching
	// change while a payment is pending (interface.md "Address modes" 4).
	MsgModePending = "The address mode cannot be changed while payments are pending"
	// MsgModeAddressesWatched is the 409 of a change of address mode or
	// pool matching while payments of the old mode still take transfers
	// on addresses the new mode would give out too.
	MsgModeAddressesWatched = "The address mode cannot be changed while payments can still be paid on addresses the new mode would share (confirming, partial, or expired less than 24 hours ago); try again once they are resolved"
)

// MsgStaticAddressWatched is the 409 of registering as a static address
// one that a payment still takes transfers on (in progress, or expired
// inside its 24-hour late window): a pool or dedicated payment on it would
// share them.
func MsgStaticAddressWatched(n Network, address string) string {
	return fmt.Sprintf("addresses.%s: %s is the address of a payment that can still be paid (in progress, or expired less than 24 hours ago); register it once that payment is resolved", n, address)
}

// Messages of the payment-link form a buyer fills in (paywatch's own).
const (
	MsgBuyerAmount       = "Enter an amount such as 25 or 25.50"
	MsgBuyerAmountZero   = "Enter an amount greater than zero"
	MsgBuyerAmountDigits = "Enter an amount with at most %d decimal places"
	MsgBuyerAmountMin    = "The amount must be at least %s"
	MsgBuyerEmail        = "Enter a valid email address, or leave it empty"
	MsgBuyerName         = "Enter a name of at most 100 characters, without special characters"
	MsgBuyerNote         = "Enter a note of at most 500 characters"
)

// Messages of the dashboard's pages (paywatch's own).
const (
	MsgFormExpired         = "This form has expired. Go back, reload the page and try again."
	MsgInvalidForm         = "The form holds characters that cannot be saved; remove them and try again."
	MsgOwnerOnly           = "Only the project's owner can do this."
	MsgOperatorDeactivated = "The operator deactivated this project; ask them to activate it"
	MsgWholeNumber         = "%s must be a whole number"

	MsgStaticAddressNotFound = "This address is not in the wallet"
	MsgStaticAddressAssigned = "This address belongs to a customer for good (dedicated mode) and cannot be removed"
	MsgStaticAddressBusy     = "This address has payments in progress; remove it once they are resolved"
	MsgCheckInbox            = "If the address can be registered, a confirmation link is on its way. Open it within 24 hours to finish."
	MsgCheckInboxReset       = "If an account has this address, a link to reset its password is on its way. It works for one hour."
)

// Messages of the dashboard's accounts (operations.md §6; paywatch's own).
// Their burst limits answer MsgTooManyRequests.
const (
	MsgInvalidCredentials  = "Invalid email or password"
	MsgWrongPassword       = "Wrong password"
	MsgConfirmPassword     = "Enter the password you chose when you registered"
	MsgAccountSuspended    = "Account suspended. Contact support."
	MsgAccountClosed       = "Account is no longer active."
	MsgSessionEnded        = "Your session has ended. Sign in again."
	MsgLinkGone            = "This link has expired or was already used"
	MsgInvalidCode         = "Invalid code"
	MsgPasswordLength      = "Use a password of 10 to 200 characters"
	MsgProtectionKeyLength = "Use a protection key of 8 to 200 characters"
	// MsgProtectionKeyIsPassword refuses a protection key equal to the
	// account's password.
	MsgProtectionKeyIsPassword = "Use a protection key different from your password"
	// MsgPasswordIsProtectionKey refuses a new password equal to the
	// account's protection key.
	MsgPasswordIsProtectionKey = "Use a password different from your protection key"
	// MsgInviteSignIn asks the invited address's account to sign in
	// before it accepts; it takes the address.
	MsgInviteSignIn        = "Sign in as %s to accept this invitation"
	MsgSetProtectionKey    = "Set a protection key first"
	MsgWrongProtectionKey  = "Wrong protection key"
	MsgAlreadyHasAccess    = "This address already has access to the project"
	MsgTwoFactorOn         = "Two-factor authentication is already on"
	MsgTwoFactorNotStarted = "Start setting up two-factor authentication again"
)

// MsgHistoryShallow is paywatch's own: the error of a chain read whose
// endpoint's history stops short of the scanner's cursor (SOLANA's
// getSignaturesForAddress), which /health recognises in a failing
// scanner's last error to say what to do about it.
const MsgHistoryShallow = "the endpoint's history does not reach the cursor"
