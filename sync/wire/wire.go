package wire

import (
	"encoding/json"
	"github.com/posedge/posedge/internal/parseguard"

	"errors"
	"fmt"
	"strings"
)

// Header names and values carried by every transaction message.
const (
	HeaderMsgID  = "Nats-Msg-Id"    // "<store_id>.<flow_no>": JetStream's dedup inside its window
	HeaderSchema = "Posedge-Schema" // body schema version
	SchemaV1     = "1"

	DefaultSubjectPrefix = "pos.txn"
	DefaultStream        = "POS_TXN"
	// DefaultCatalogBucket is the item master's key-value bucket: HQ
	// writes it, every store follows it (hq.catalog_bucket on both).
	DefaultCatalogBucket = "POS_CATALOG"

	// HaveSubjectPrefix is where posedge-hq answers "which of these flow
	// numbers do you hold for my store?". It lies outside the stream's
	// subjects so the stream never captures requests (contract §5).
	HaveSubjectPrefix = "posedge.hq.have"

	// DeliverSubjectPrefix is where posedge-hq takes one transaction of a
	// store directly, outside the stream: the store's way past a
	// Nats-Msg-Id another store's leaked credential keeps claiming in
	// JetStream's duplicate window (docs/hq-sync.md, "Direct delivery").
	DeliverSubjectPrefix = "posedge.hq.deliver"
)

// TxnSubject is the subject of a store's sales and refunds.
func TxnSubject(prefix, storeID string) string { return prefix + "." + storeID }

// ManifestSubject carries a store's end-of-day manifests.
func ManifestSubject(prefix, storeID string) string { return prefix + "." + storeID + ".manifest" }

// HeartbeatSubject carries a store's minute heartbeats.
func HeartbeatSubject(prefix, storeID string) string { return prefix + "." + storeID + ".heartbeat" }

// HaveSubject is the request subject for a store's "what do you hold" query.
func HaveSubject(storeID string) string { return HaveSubjectPrefix + "." + storeID }

// DeliverSubject is the request subject of a store's direct delivery:
// headers and body as the transaction's message on the stream.
func DeliverSubject(storeID string) string { return DeliverSubjectPrefix + "." + storeID }

// CatalogLiveSubject is where the catalog bucket's changes are
// republished by JetStream (the bucket's RePublish, set by posedge-hq):
// "posedge.catalog.<bucket>.<key>". Under the two-account template of
// docs/security.md the stores' account imports this prefix as a stream,
// so a store reads the changes without any JetStream consumer.
func CatalogLiveSubject(bucket string) string { return CatalogLivePrefix + "." + bucket }

// CatalogLivePrefix heads CatalogLiveSubject.
const CatalogLivePrefix = "posedge.catalog"

// CatalogAPISubject is where a store's account without JetStream (the
// stores' account of docs/security.md's two-account template) imports
// one of the catalog bucket's two read requests from HQ's account:
// "posedge.hq.catalog.<bucket>.info" for $JS.API.STREAM.INFO.KV_<bucket>,
// "posedge.hq.catalog.<bucket>.get" for $JS.API.DIRECT.GET.KV_<bucket>.
// (In an account without JetStream the server itself answers every
// $JS.API request with "not enabled", so the imports need names of
// their own.)
func CatalogAPISubject(bucket, op string) string { return "posedge.hq.catalog." + bucket + "." + op }

// The operations of CatalogAPISubject.
const (
	CatalogAPIInfo = "info"
	CatalogAPIGet  = "get"
)

// CatalogStream is the JetStream stream behind a key-value bucket.
func CatalogStream(bucket string) string { return "KV_" + bucket }

// InboxPrefix is where a store's replies (JetStream acks, HQ's answers)
// are sent: "_INBOX.<store_id>", so that its NATS user may subscribe to
// its own replies only.
func InboxPrefix(storeID string) string { return "_INBOX." + storeID }

// MsgID is the Nats-Msg-Id of a transaction.
func MsgID(storeID, flowNo string) string { return storeID + "." + flowNo }

// Txn is the part of a transaction body (the JSON returned to the
// terminal) that HQ needs to index it; the whole body is stored as is.
type Txn struct {
	FlowNo         string `json:"flow_no"`
	StoreID        string `json:"store_id"`
	TerminalID     string `json:"terminal_id"`
	Kind           string `json:"kind"`
	TotalCents     int64  `json:"total_cents"`
	Tender         string `json:"tender"`
	CreatedAt      string `json:"created_at"`
	OccurredAt     string `json:"occurred_at"`
	OriginalFlowNo string `json:"original_flow_no,omitempty"`
	Lines          []Line `json:"lines"`
}

// ErrInvalid marks a body HQ can never store, whatever the retry: the
// sender should quarantine it rather than resend.
var ErrInvalid = errors.New("invalid transaction message")

// ParseTxn decodes and checks a transaction body. Keys are matched
// exactly: a key that differs only in case from another key of its object
// (duplicates included) is refused, since encoding/json would take either
// for the field and another reader might take the other.
//
// A panic while decoding (a bug in a decoder, never to take HQ's
// receiver down on one message) is an ErrInvalid naming the message.
func ParseTxn(body []byte) (t Txn, err error) {
	err = parseguard.Run("transaction message", func() error {
		var perr error
		t, perr = parseTxn(body)
		return perr
	})
	var pe *parseguard.PanicError
	if errors.As(err, &pe) {
		return Txn{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return t, err
}

func parseTxn(body []byte) (Txn, error) {
	t, ok := strictTxn(body)
	if !ok {
		// Not the plain form, or refused: the strict check says why.
		if err := checkJSONKeys(body, txnFields); err != nil {
			return Txn{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		var err error
		if t, err = decodeTxn(body); err != nil {
			return t, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	var missing []string
	if t.FlowNo == "" {
		missing = append(missing, "flow_no")
	}
	if t.StoreID == "" {
		missing = append(missing, "store_id")
	}
	if t.TerminalID == "" {
		missing = append(missing, "terminal_id")
	}
	if t.Kind != "sale" && t.Kind != "refund" {
		missing = append(missing, "kind")
	}
	if t.CreatedAt == "" {
		missing = append(missing, "created_at")
	}
	if t.TotalCents < 0 {
		missing = append(missing, "total_cents")
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("%w: bad or missing %s", ErrInvalid, strings.Join(missing, ", "))
	}
	return t, nil
}

// decodeTxn decodes a body that checkJSONKeys accepted (valid JSON, no key
// twice, no field name in another case) into a Txn. It serves the bodies
// the one pass (strictTxn) leaves — escapes, nested values under other
// keys, non-ASCII keys — which posedge does not write, so reflection's
// cost does not matter here and json.Unmarshal's rules stay the only
// ones.
func decodeTxn(body []byte) (Txn, error) {
	var t Txn
	err := json.Unmarshal(body, &t)
	return t, err
}

// HaveRequest asks HQ which of the listed flow numbers it holds.
type HaveRequest struct {
	StoreID string   `json:"store_id"`
	FlowNos []string `json:"flow_nos"`
	// Seqs, when set, pairs each flow number with the stream sequence
	// of JetStream's PubAck for it (0: none known). posedge-hq then
	// tells a row its consumer has not read yet (Pending) from one it
	// lacks: a store does not resend what is still on its way. Absent
	// from stores before it, and ignored by posedge-hq before it.
	Seqs []uint64 `json:"seqs,omitempty"`
}

// HaveReply lists the requested flow numbers HQ holds and, when the
// request carried Seqs, those it lacks but whose message is still in the
// stream, not yet read by its consumer (docs/hq-sync.md, "No resend
// storm"). A flow number in neither list is one HQ lacks.
type HaveReply struct {
	Have    []string `json:"have"`
	Pending []string `json:"pending,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// DeliverReply is posedge-hq's answer to a direct delivery: what became
// of the transaction (hqdb's outcome: "inserted", "duplicate",
// "conflict", "quarantined"; each means HQ holds it, as its have answer
// would), or why it was not taken.
type DeliverReply struct {
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Manifest is a terminal's day as the store saw it, published at the end
// of each business day (and on demand) so HQ can tell a complete day.
type Manifest struct {
	StoreID     string `json:"store_id"`
	TerminalID  string `json:"terminal_id"`
	Date        string `json:"date"` // YYYYMMDD, store time zone
	Sales       int64  `json:"sales"`
	SalesCents  int64  `json:"sales_cents"`
	Refunds     int64  `json:"refunds"`
	RefundCents int64  `json:"refund_cents"`
	FirstFlowNo string `json:"first_flow_no"`
	LastFlowNo  string `json:"last_flow_no"`
	SentAt      string `json:"sent_at"`
}

// Heartbeat says a store is alive and how much it still has to send.
type Heartbeat struct {
	StoreID      string `json:"store_id"`
	SentAt       string `json:"sent_at"`
	Backlog      int64  `json:"backlog"`
	OldestUnsent string `json:"oldest_unsent,omitempty"`
	Version      string `json:"version"`
	// Fields of heartbeat format 2 (docs/hq-sync.md "Heartbeats"). They
	// are additive: the Posedge-Schema header stays 1, so a posedge-hq
	// that predates them reads the heartbeat as before and ignores them
	// (encoding/json skips unknown fields); a reader tells a format-2
	// heartbeat by HeartbeatFormat >= 2, never by their zero values.
	HeartbeatFormat int    `json:"heartbeat_format,omitempty"`
	Unconfirmed     int64  `json:"unconfirmed,omitempty"` // sent but HQ's storage not yet confirmed
	Mode            string `json:"mode,omitempty"`        // the daemon's mode (normal, offline …)
	StatusLevel     string `json:"status_level,omitempty"`
	// StoreClock is the store's clock when the heartbeat was built; HQ
	// compares it with its own receive time for clock_offset_ms.
	StoreClock string `json:"store_clock,omitempty"`
	// JournalRetentionDays is the store's journal.retention in whole
	// days: the oldest business day its audit can still repair at HQ
	// (older confirmed rows are pruned). posedge-hq's completeness says
	// past retention by it, per store (docs/hq-sync.md).
	JournalRetentionDays int `json:"journal_retention_days,omitempty"`
}

// MaxJournalRetentionDays bounds Heartbeat.JournalRetentionDays: about
// 100 years; more is a broken or hostile heartbeat.
const MaxJournalRetentionDays = 36500

// HeartbeatFormat2 is the heartbeat format this build writes.
const HeartbeatFormat2 = 2

// StockSubject carries a store's stock adjustments (contract §6).
func StockSubject(prefix, storeID string) string { return prefix + "." + storeID + ".stock" }

// AdjustmentMsgID is the Nats-Msg-Id of a stock adjustment.
func AdjustmentMsgID(storeID, adjustmentID string) string { return storeID + ".adj." + adjustmentID }

// StockAdjustment is a relative stock change made at a store (receiving
// goods, a count, damage), sent to HQ once.
type StockAdjustment struct {
	StoreID      string `json:"store_id"`
	AdjustmentID string `json:"adjustment_id"`
	Barcode      string `json:"barcode"`
	Delta        int64  `json:"delta"`
	Reason       string `json:"reason"` // receiving | count | damage | other
	Stock        int64  `json:"stock"`  // the stock after it, at the store
	CreatedAt    string `json:"created_at"`
}

// ValidAdjustmentReason tells the reasons a stock adjustment may give.
func ValidAdjustmentReason(s string) bool {
	switch s {
	case "receiving", "count", "damage", "other":
		return true
	}
	return false
}
