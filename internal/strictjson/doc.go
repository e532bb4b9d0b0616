// Package strictjson refuses JSON texts that readers could take in two
// ways: duplicate keys in one object, and keys in another case than a field's.
package strictjson
