package email

import "testing"

// STARTTLS (and TLS before AUTH) is required of every relay but one on
// loopback, named by a loopback address or "localhost"; any other name,
// even one that resolves to loopback, must offer TLS.
func TestOnlyALoopbackRelayMayGoWithoutTLS(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:25": true, "127.0.0.2:2525": true, "[::1]:25": true, "localhost:587": true,
		"localhost.:587": false, "10.0.0.5:25": false, "smtp.example.com:587": false, "[2001:db8::1]:25": false,
		"127.0.0.1": false, "": false,
	} {
		if got := (&Sender{Addr: addr}).loopback(); got != want {
			t.Errorf("%q: loopback %v, want %v", addr, got, want)
		}
	}
}
