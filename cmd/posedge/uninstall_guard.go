package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/posedge/posedge/offline/journal"
)

// uninstallGuard refuses `posedge uninstall` while the journal holds
// transactions headquarters has not acknowledged (waiting or quarantined):
// the service going away is how such sales get forgotten. --force skips
// it; the journal file is kept either way.
func uninstallGuard(ctx context.Context, configPath string) error {
	cfg, err := loadConfig(configPath)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("refusing to uninstall: cannot tell whether the journal holds sales not yet at HQ (%w); posedge uninstall --force removes the service anyway", err)}
	}
	if _, err := os.Stat(cfg.Journal.Path); errors.Is(err, os.ErrNotExist) {
		return nil // never sold here
	}
	j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{ReadOnly: true})
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("refusing to uninstall: %w; posedge uninstall --force removes the service anyway", err)}
	}
	defer j.Close()
	st, err := j.Stats(ctx)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("refusing to uninstall: %w; posedge uninstall --force removes the service anyway", err)}
	}
	if n := st.Backlog + st.Quarantined; n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("refusing to uninstall: %d transactions in %s are not at HQ yet (%d waiting, %d quarantined); "+
			"let posedge send them (posedge status shows the backlog; posedge sync quarantine list), or posedge uninstall --force (the journal is kept)",
			n, cfg.Journal.Path, st.Backlog, st.Quarantined)}
	}
	return nil
}
