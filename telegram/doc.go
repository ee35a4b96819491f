// Package telegram is a small typed client for the Telegram Bot API and the
// text of paywatch's chat notifications (operations §7).
//
// It speaks the Bot API over net/http directly rather than through a bot
// library: paywatch needs three methods, wants the 429 answer's retry_after
// as a value, and must never let the bot token, which the Bot API puts in
// every URL, reach a log line. Package telegramtest holds an in-process fake
// of the Bot API for tests.
package telegram
