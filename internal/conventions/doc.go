// Package conventions enforces the project's habits by test, not review:
// every package documented, and the import rules between its parts.
package conventions
