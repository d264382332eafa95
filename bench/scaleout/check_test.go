package main

import "testing"

func TestCheckLog(t *testing.T) {
	counts := map[string]int{"customer-a": 1, "customer-b": 2, "customer-x": 1}
	got := checkLog([]string{"customer-a", "customer-b", "customer-c", "customer-a"}, counts)
	want := logCheck{acked: 3, missing: 1, duplicated: 1, unacked: 1}
	if got != want {
		t.Fatalf("checkLog = %+v, want %+v", got, want)
	}
	if got.ok() {
		t.Fatal("a missing and a duplicated delivery pass the check")
	}
	if !checkLog([]string{"customer-a"}, map[string]int{"customer-a": 1}).ok() {
		t.Fatal("one delivery logged once fails the check")
	}
}

func TestParseCPULine(t *testing.T) {
	busy, total, err := parseCPULine("cpu  100 2 30 400 5 6 7 8 9 0")
	if err != nil || busy != 153 || total != 558 {
		t.Fatalf("parseCPULine = %d, %d, %v; want 153, 558, nil", busy, total, err)
	}
	if _, _, err := parseCPULine("intr 1 2 3"); err == nil {
		t.Fatal("a line that is not the cpu line parsed")
	}
}
