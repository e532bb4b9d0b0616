package hq

// SameJSON exposes sameBody to the tests.
var SameJSON = sameBody
