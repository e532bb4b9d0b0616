package bench

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// A labelled series is read under its name with its labels; the
// unlabelled ones as before.
func TestScrapeMetricsKeepsLabelledSeries(t *testing.T) {
	page := "# HELP posedge_sales_total x\n# TYPE posedge_sales_total counter\n" +
		"posedge_sales_total{kind=\"sale\",mode=\"degraded\"} 9964\n" +
		"posedge_sales_total{kind=\"sale\",mode=\"normal\"} 1.5e+06\n" +
		"go_goroutines 33\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(page)) }))
	defer srv.Close()
	m, err := scrapeMetrics(srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{degradedSalesSeries: 9964, `posedge_sales_total{kind="sale",mode="normal"}`: 1.5e6, "go_goroutines": 33} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v (all: %v)", name, m[name], want, m)
		}
	}
}
