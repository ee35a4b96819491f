package workflows

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Payload encryption (issue 42). Every payload paywatch hands Temporal
// (workflow inputs and results, signals, updates, queries, activity inputs
// and results, memos, and failures' messages, stack traces and details)
// passes through PayloadCodec, which seals it with AES-256-GCM under the
// current key and names the key in the payload's metadata. Temporal's
// servers, its database and a hosted service's operators see only
// ciphertext; workers, the API and the codec endpoint the Web UI calls
// hold the keys.
//
// Search attributes cannot be encrypted (the server indexes them):
// SearchRefs keeps the merchant's references out of them.

// Metadata of an encrypted payload. The names follow Temporal's encryption
// samples, so tools that know them recognise such payloads.
const (
	// MetadataEncodingEncrypted is the "encoding" of a sealed payload.
	MetadataEncodingEncrypted = "binary/encrypted"
	// MetadataEncryptionKeyID names the key that sealed it (PayloadKeyID).
	MetadataEncryptionKeyID = "encryption-key-id"
	// MetadataEncryptionCipher names the cipher.
	MetadataEncryptionCipher = "encryption-cipher"
	cipherName               = "AES256-GCM"
)

// PayloadKeySize is the size of a payload key: AES-256.
const PayloadKeySize = 32

// PayloadKeyID is the id under which a payload sealed with key names it:
// a fingerprint of the key, so that an id always means one key and an
// operator never has to choose or keep ids apart.
func PayloadKeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("paywatch payload key id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// DerivePayloadKey derives the payload key from the master key, for an
// operator who sets no PAYWATCH_PAYLOAD_KEY of its own.
func DerivePayloadKey(masterKey string) []byte {
	return deriveKey(masterKey, "paywatch temporal payloads v1")
}

// DeriveSearchRefKey derives the key of SearchRef from the master key.
func DeriveSearchRefKey(masterKey string) []byte {
	return deriveKey(masterKey, "paywatch temporal search refs v1")
}

func deriveKey(masterKey, purpose string) []byte {
	m := hmac.New(sha256.New, []byte(masterKey))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// PayloadCodec seals payloads with AES-256-GCM under its current key and
// opens them with any of its keys. Payloads that are not sealed (histories
// written before encryption was on) are passed through as they are, so
// that running payments and recorded histories go on being read.
type PayloadCodec struct {
	currentID string
	keys      map[string]cipher.AEAD
}

// NewPayloadCodec returns a codec that seals with current and opens with
// current and every old key: a key that was current before a rotation
// stays among the old ones until no history holds payloads it sealed
// (the end of every payment's late window and the namespace's retention).
func NewPayloadCodec(current []byte, old ...[]byte) (*PayloadCodec, error) {
	c := &PayloadCodec{currentID: PayloadKeyID(current), keys: map[string]cipher.AEAD{}}
	for i, k := range append([][]byte{current}, old...) {
		if len(k) != PayloadKeySize {
			if i == 0 {
				return nil, fmt.Errorf("the payload key is %d bytes, not %d", len(k), PayloadKeySize)
			}
			return nil, fmt.Errorf("old payload key %d is %d bytes, not %d", i, len(k), PayloadKeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		c.keys[PayloadKeyID(k)] = aead
	}
	return c, nil
}

// KeyID is the id of the key the codec seals with.
func (c *PayloadCodec) KeyID() string { return c.currentID }

// Encode seals each payload that is not sealed yet.
func (c *PayloadCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	aead := c.keys[c.currentID]
	for i, p := range payloads {
		if encrypted(p) {
			out[i] = p
			continue
		}
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encode payload: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(MetadataEncodingEncrypted),
				MetadataEncryptionKeyID:    []byte(c.currentID),
				MetadataEncryptionCipher:   []byte(cipherName),
			},
			// The key id is the additional data: a payload cannot be
			// passed off as sealed under another key.
			Data: aead.Seal(nonce, nonce, plain, []byte(c.currentID)),
		}
	}
	return out, nil
}

// ErrUnknownPayloadKey reports a payload sealed under a key the codec does
// not hold.
var ErrUnknownPayloadKey = errors.New("payload sealed with a key that is not configured")

// Decode opens each sealed payload and passes the others through.
func (c *PayloadCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if !encrypted(p) {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataEncryptionKeyID])
		aead, ok := c.keys[id]
		if !ok {
			return nil, fmt.Errorf("%w: key id %q (add the key to PAYWATCH_PAYLOAD_OLD_KEYS)", ErrUnknownPayloadKey, id)
		}
		data := p.GetData()
		if len(data) < aead.NonceSize() {
			return nil, fmt.Errorf("%w: too short", ErrSealedPayload)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrSealedPayload, id, err)
		}
		var orig commonpb.Payload
		if err := proto.Unmarshal(plain, &orig); err != nil {
			return nil, fmt.Errorf("decode payload: %w", err)
		}
		out[i] = &orig
	}
	return out, nil
}

func encrypted(p *commonpb.Payload) bool {
	return string(p.GetMetadata()[converter.MetadataEncoding]) == MetadataEncodingEncrypted
}

// NewDataConverter returns Temporal's default data converter with the
// codec applied to every payload.
//
// In a workflow, a payload sealed under a key this process lacks panics
// instead of returning an error: the SDK fails a workflow whose input it
// cannot decode, and drops such a signal, which for a payment would mean a
// payment never watched; a panic fails only the workflow task, which
// Temporal retries until a worker that holds the key takes it.
func NewDataConverter(c *PayloadCodec) converter.DataConverter {
	return sealedConverter{converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)}
}

// sealedConverter is NewDataConverter's converter (converter.ContextAware).
type sealedConverter struct{ converter.DataConverter }

func (c sealedConverter) WithWorkflowContext(converter.WorkflowContext) converter.DataConverter {
	return inWorkflow(c)
}

func (c sealedConverter) WithContext(context.Context) converter.DataConverter { return c }

// inWorkflow is the converter a workflow decodes with.
type inWorkflow struct{ converter.DataConverter }

func (c inWorkflow) FromPayload(p *commonpb.Payload, v any) error {
	return unreadable(c.DataConverter.FromPayload(p, v))
}

func (c inWorkflow) FromPayloads(ps *commonpb.Payloads, v ...any) error {
	return unreadable(c.DataConverter.FromPayloads(ps, v...))
}

// ErrSealedPayload reports a sealed payload the codec could not open.
var ErrSealedPayload = errors.New("sealed payload cannot be opened")

// unreadable panics on a payload the codec could not open and returns any
// other error as it is.
func unreadable(err error) error {
	if errors.Is(err, ErrUnknownPayloadKey) || errors.Is(err, ErrSealedPayload) {
		panic(fmt.Sprintf("%v: the workflow task is retried until a worker can open it (PAYWATCH_PAYLOAD_KEY, PAYWATCH_PAYLOAD_OLD_KEYS)", err))
	}
	return err
}

// NewFailureConverter returns the failure converter that goes with dc: it
// moves failures' messages and stack traces into their encoded attributes,
// which dc seals, since they may name an address or a reference; the
// failures' types, which the API maps to its answers, stay readable.
func NewFailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		DataConverter: dc, EncodeCommonAttributes: true,
	})
}

// SearchRef is what the ExternalRef and ExternalOrderId search attributes
// show for a merchant's reference value: a keyed hash, so that an operator
// who knows a customer's e-mail can find the customer's payments in the
// Temporal Web UI (`paywatch admin temporal-search`), while the index,
// which the server cannot encrypt, names nobody. An empty value stays
// empty.
func SearchRef(key []byte, value string) string {
	if value == "" {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(value))
	return "h1_" + hex.EncodeToString(m.Sum(nil)[:16])
}

// RegisterOption configures Register.
type RegisterOption func(*registerOptions)

type registerOptions struct {
	dataConverter converter.DataConverter
}

// WithDataConverter tells Register the data converter of the worker's
// client (NewDataConverter), with which payment runs read their memo.
func WithDataConverter(dc converter.DataConverter) RegisterOption {
	return func(o *registerOptions) { o.dataConverter = dc }
}
