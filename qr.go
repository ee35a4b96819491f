package paywatch

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"sync"

	qrcode "github.com/skip2/go-qrcode"
)

// QRCodeSize is the width and height in pixels of the QR code PNG.
const QRCodeSize = 256

// qrRowBytes is the length of one image row: a filter byte, then one bit
// a pixel.
const qrRowBytes = 1 + QRCodeSize/8

// qrCompressors keeps zlib writers, whose compressor state is about a
// megabyte, between images: every per_payment payment draws a new code.
var qrCompressors = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

// QRCodeDataURI returns a "data:image/png;base64,..." URI of a black on
// white QR code (medium error correction) encoding the address only. The
// amount is deliberately left out: wallets disagree on payment-URI formats,
// and a customer who scans an address types the amount they were shown.
//
// The PNG is written here from the code's module bitmap, as a one-bit
// greyscale image whose rows are packed once per module row, rather than by
// the library's PNG method, which draws a full-colour image and compresses
// it at the default level, or by image/png, which reads the image a pixel
// at a time: both took most of a payment creation's CPU
// (BenchmarkQRCodeDataURI).
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

	// Each pixel takes the module under it; the modules' sizes differ by
	// at most one pixel, as the library's own drawing does. A set bit is
	// white.
	var raw [QRCodeSize * qrRowBytes]byte
	var packed [qrRowBytes]byte // the row of the last module row packed
	last := -1
	for y := range QRCodeSize {
		my := y * n / QRCodeSize
		if my != last {
			last = my
			row := bits[my]
			packed = [qrRowBytes]byte{} // filter 0 (None), all black
			for x := range QRCodeSize {
				if !row[x*n/QRCodeSize] {
					packed[1+x/8] |= 0x80 >> (x % 8)
				}
			}
		}
		copy(raw[y*qrRowBytes:], packed[:])
	}

	var png bytes.Buffer
	png.Grow(1024)
	png.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], QRCodeSize)
	binary.BigEndian.PutUint32(ihdr[4:], QRCodeSize)
	ihdr[8] = 1 // bit depth; colour type 0 (greyscale), deflate, no filter method, no interlace
	writePNGChunk(&png, "IHDR", ihdr[:])
	var idat bytes.Buffer
	z := qrCompressors.Get().(*zlib.Writer)
	z.Reset(&idat)
	_, err = z.Write(raw[:])
	if err == nil {
		err = z.Close()
	}
	qrCompressors.Put(z)
	if err != nil {
		return "", Errorf(EINTERNAL, "cannot encode QR code PNG: %v", err)
	}
	writePNGChunk(&png, "IDAT", idat.Bytes())
	writePNGChunk(&png, "IEND", nil)

	const prefix = "data:image/png;base64,"
	uri := make([]byte, len(prefix)+base64.StdEncoding.EncodedLen(png.Len()))
	copy(uri, prefix)
	base64.StdEncoding.Encode(uri[len(prefix):], png.Bytes())
	return string(uri), nil
}

// writePNGChunk appends a PNG chunk: length, type, data and the CRC of type
// and data.
func writePNGChunk(b *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	b.Write(n[:])
}
