// Package config loads and validates posedge's YAML configuration:
// defaults, then the file (unknown keys rejected), then every problem at once.
package config
