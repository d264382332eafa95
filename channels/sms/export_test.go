package sms

// ParseResponse exposes the answer parser to the external tests' fuzzer.
var ParseResponse = parseResponse
