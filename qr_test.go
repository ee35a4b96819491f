package paywatch_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/paywatch/paywatch"
)

func TestQRCodeDataURI(t *testing.T) {
	for _, addr := range []string{
		"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
	} {
		uri, err := paywatch.QRCodeDataURI(addr)
		require.NoError(t, err)
		const prefix = "data:image/png;base64,"
		require.True(t, strings.HasPrefix(uri, prefix))
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(uri, prefix))
		require.NoError(t, err)
		assert.Less(t, len(raw), 2048, "a small PNG")

		img, err := png.Decode(bytes.NewReader(raw))
		require.NoError(t, err)
		b := img.Bounds()
		assert.Equal(t, image.Rect(0, 0, paywatch.QRCodeSize, paywatch.QRCodeSize), b)

		black, white := 0, 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				c := color.GrayModel.Convert(img.At(x, y)).(color.Gray)
				_, _, _, a := img.At(x, y).RGBA()
				require.Equal(t, uint32(0xffff), a, "opaque at %d,%d", x, y)
				switch c.Y {
				case 0:
					black++
				case 0xff:
					white++
				default:
					t.Fatalf("pixel %d,%d is neither black nor white: %v", x, y, img.At(x, y))
				}
			}
		}
		assert.Greater(t, black, 5000, "a real code, not a blank image")
		assert.Greater(t, white, black/2)
		// The quiet zone (top-left corner) is white.
		assert.Equal(t, color.Gray{Y: 0xff}, color.GrayModel.Convert(img.At(0, 0)))

		// Deterministic: the same address gives the same image.
		again, err := paywatch.QRCodeDataURI(addr)
		require.NoError(t, err)
		assert.Equal(t, uri, again)
	}

	a, _ := paywatch.QRCodeDataURI("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
	b, _ := paywatch.QRCodeDataURI("TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH")
	assert.NotEqual(t, a, b, "different addresses give different codes")

	_, err := paywatch.QRCodeDataURI("")
	require.EqualError(t, err, "cannot make a QR code of an empty address")
	_, err = paywatch.QRCodeDataURI(strings.Repeat("x", 5000))
	require.Error(t, err, "more than a QR code holds")
}

// The image draws the code's modules: the pixel at the centre of every
// module has the module's colour, so a scanner reads the address.
func TestQRCodeDrawsEveryModule(t *testing.T) {
	const addr = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
	uri, err := paywatch.QRCodeDataURI(addr)
	require.NoError(t, err)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(uri, "data:image/png;base64,"))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	q, err := qrcode.New(addr, qrcode.Medium)
	require.NoError(t, err)
	bits := q.Bitmap()
	n := len(bits)
	for my, row := range bits {
		for mx, dark := range row {
			x := (2*mx + 1) * paywatch.QRCodeSize / (2 * n)
			y := (2*my + 1) * paywatch.QRCodeSize / (2 * n)
			c := color.GrayModel.Convert(img.At(x, y)).(color.Gray)
			assert.Equal(t, dark, c.Y == 0, "module %d,%d", mx, my)
		}
	}
}
