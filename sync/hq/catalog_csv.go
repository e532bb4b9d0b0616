package hq

import (
	"github.com/posedge/posedge/internal/parseguard"

	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/natsurl"
)

// CatalogRow is one row of a price list: the entry of one key.
type CatalogRow struct {
	Line    int // line of the file, for messages
	StoreID string
	Barcode string
	Item    CatalogItem
}

// ParseCatalogCSV reads a price list "barcode,name,price_cents,active[,store_id]"
// (a first line naming those columns is a header) and validates every
// row before returning any: a malformed row is an error naming its
// line, so an import is all or nothing. A key on two lines is refused.
//
// A panic inside the CSV reader (FieldPos did, on a malformed quote) is
// a named error, never a crash of posedge-hq's import.
func ParseCatalogCSV(r io.Reader, maxCents int64) (rows []CatalogRow, err error) {
	err = parseguard.Run("price list", func() error {
		var perr error
		rows, perr = parseCatalogCSV(r, maxCents)
		return perr
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func parseCatalogCSV(r io.Reader, maxCents int64) ([]CatalogRow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	var rows []CatalogRow
	seen := map[string]int{}
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A csv.ParseError names its line itself; FieldPos would
			// panic here, with no record read.
			return nil, fmt.Errorf("reading the price list: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if first && strings.EqualFold(strings.TrimSpace(rec[0]), "barcode") {
			continue
		}
		if len(rec) < 4 || len(rec) > 5 {
			return nil, fmt.Errorf("line %d: %d fields, want barcode,name,price_cents,active[,store_id]", line, len(rec))
		}
		row := CatalogRow{Line: line, Barcode: strings.TrimSpace(rec[0])}
		row.Item.Name = strings.TrimSpace(rec[1])
		price := strings.TrimSpace(rec[2])
		row.Item.PriceCents, err = strconv.ParseInt(price, 10, 64)
		if err != nil || strings.HasPrefix(price, "+") {
			return nil, fmt.Errorf("line %d: price_cents %q is not a whole number of cents", line, rec[2])
		}
		switch strings.ToLower(strings.TrimSpace(rec[3])) {
		case "true", "1", "yes":
			row.Item.Active = true
		case "false", "0", "no":
		default:
			return nil, fmt.Errorf("line %d: active %q is not true or false", line, rec[3])
		}
		if len(rec) == 5 {
			row.StoreID = strings.TrimSpace(rec[4])
		}
		if e := ValidateCatalogEntry(row.StoreID, row.Barcode, row.Item, maxCents); e != nil {
			return nil, fmt.Errorf("line %d: %s", line, e.Message)
		}
		key := CatalogKey(row.StoreID, row.Barcode)
		if prev, ok := seen[key]; ok {
			return nil, fmt.Errorf("line %d: key %s is already on line %d", line, key, prev)
		}
		seen[key] = line
		rows = append(rows, row)
	}
	return rows, nil
}

// ImportCatalogFile is `posedge-hq catalog import`: it validates the
// whole price list at path, then writes the changed keys into cfg's
// bucket, printing a progress line about once a second to out.
func ImportCatalogFile(ctx context.Context, cfg Config, path string, out io.Writer, log *slog.Logger) (ImportSummary, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportSummary{}, fmt.Errorf("open price list: %w", err)
	}
	defer f.Close()
	rows, err := ParseCatalogCSV(bufio.NewReaderSize(f, 1<<16), cfg.MaxSaleCents)
	if err != nil {
		return ImportSummary{}, fmt.Errorf("%s: %w (nothing written)", path, err)
	}
	nc, err := connectNATS(cfg, "posedge-hq catalog import", log)
	if err != nil {
		return ImportSummary{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return ImportSummary{}, fmt.Errorf("jetstream: %w", err)
	}
	cat := NewCatalog(cfg, js)
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_, err = cat.Bucket(octx)
	cancel()
	if err != nil {
		return ImportSummary{}, fmt.Errorf("%w (is NATS at %s reachable?)", err, natsurl.Redact(cfg.NATSURL))
	}
	return cat.Import(ctx, rows, func(p ImportProgress) {
		fmt.Fprintf(out, "catalog import: %d/%d rows, %d written, %d unchanged\n", p.Rows, p.Total, p.Written, p.Unchanged)
	})
}
