package paywatch

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"sync"

	qrcode "github.com/skip2/go-qrcode"
)

// QRCodeSize is the width and height in pixels of the QR code PNG.
const QRCodeSize = 256

// qrPalette is black on white: index 0 white, 1 black.
var qrPalette = color.Palette{color.Gray{Y: 0xff}, color.Gray{Y: 0}}

// qrEncoder favours speed: a two-colour image of large modules compresses
// well even so, and every per_payment payment draws a new code. Its buffer
// pool keeps the compressor's state (about a megabyte) between images.
var qrEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &qrBuffers{}}

// qrBuffers is a png.EncoderBufferPool over a sync.Pool.
type qrBuffers struct{ p sync.Pool }

func (b *qrBuffers) Get() *png.EncoderBuffer {
	if v, ok := b.p.Get().(*png.EncoderBuffer); ok {
		return v
	}
	return nil
}

func (b *qrBuffers) Put(v *png.EncoderBuffer) { b.p.Put(v) }

// QRCodeDataURI returns a "data:image/png;base64,..." URI of a black on
// white QR code (medium error correction) encoding the address only. The
// amount is deliberately left out: wallets disagree on payment-URI formats,
// and a customer who scans an address types the amount they were shown.
//
// The image is drawn here from the code's module bitmap straight into a
// two-colour paletted image, rather than by the library's PNG method, which
// draws a full-colour image and compresses it at the default level: that
// took most of a payment creation's CPU (BenchmarkQRCodeDataURI).
func QRCodeDataURI(address string) (string, error) {
	if address == "" {
		return "", invalidf("cannot make a QR code of an empty address")
	}
	q, err := qrcode.New(address, qrcode.Medium)
	if err != nil {
		return "", invalidf("cannot make a QR code: %v", err)
	}
	bits := q.Bitmap() // modules, quiet zone included
	n := len(bits)
	img := image.NewPaletted(image.Rect(0, 0, QRCodeSize, QRCodeSize), qrPalette)
	// Each pixel takes the module under it; the modules' sizes differ by
	// at most one pixel, as the library's own drawing does.
	col := make([]int, QRCodeSize)
	for x := range col {
		col[x] = x * n / QRCodeSize
	}
	for y := range QRCodeSize {
		row := bits[y*n/QRCodeSize]
		line := img.Pix[y*img.Stride : y*img.Stride+QRCodeSize]
		for x := range line {
			if row[col[x]] {
				line[x] = 1
			}
		}
	}
	var buf bytes.Buffer
	if err := qrEncoder.Encode(&buf, img); err != nil {
		return "", Errorf(EINTERNAL, "cannot encode QR code PNG: %v", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
