package paywatch

import (
	"encoding/base64"

	qrcode "github.com/skip2/go-qrcode"
)

// QRCodeSize is the width and height in pixels of the QR code PNG.
const QRCodeSize = 256

// QRCodeDataURI returns a "data:image/png;base64,..." URI of a black on
// white QR code (medium error correction) encoding the address only. The
// amount is deliberately left out: wallets disagree on payment-URI formats,
// and a customer who scans an address types the amount they were shown.
func QRCodeDataURI(address string) (string, error) {
	if address == "" {
		return "", invalidf("cannot make a QR code of an empty address")
	}
	q, err := qrcode.New(address, qrcode.Medium)
	if err != nil {
		return "", invalidf("cannot make a QR code: %v", err)
	}
	png, err := q.PNG(QRCodeSize)
	if err != nil {
		return "", Errorf(EINTERNAL, "cannot encode QR code PNG: %v", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}
