package domain

import (
	"strings"
	"testing"
)

func TestKeywordIDIsDeterministic(t *testing.T) {
	a := KeywordID("shop_1", " Running  Shoes ", "https://a.example/p")
	if a != KeywordID("shop_1", "running shoes", "https://a.example/p") || !HasPrefixID(a, PrefixKeyword) {
		t.Fatalf("id %s", a)
	}
	for _, other := range []string{KeywordID("shop_2", "running shoes", "https://a.example/p"),
		KeywordID("shop_1", "running shoes", "https://a.example/q"), KeywordID("shop_1", "trail shoes", "https://a.example/p")} {
		if other == a {
			t.Fatalf("distinct inputs share id %s", a)
		}
	}
	if strings.Contains(a, "running") {
		t.Fatalf("id leaks the keyword: %s", a)
	}
}

func TestKeywordRankingValidate(t *testing.T) {
	good := KeywordRanking{Keyword: " Shoes ", URL: "https://a.example/p", Position: 1.5, SearchVolume: 1, Clicks: 1, Impressions: 2, Date: "2026-02-28"}
	if err := good.Validate(); err != nil || good.Keyword != "shoes" {
		t.Fatalf("good: %v %+v", err, good)
	}
	for field, mod := range map[string]func(*KeywordRanking){
		"keyword":       func(r *KeywordRanking) { r.Keyword = "  " },
		"url":           func(r *KeywordRanking) { r.URL = "/p" },
		"position":      func(r *KeywordRanking) { r.Position = 0.5 },
		"search_volume": func(r *KeywordRanking) { r.SearchVolume = -1 },
		"impressions":   func(r *KeywordRanking) { r.Impressions = -1 },
		"date":          func(r *KeywordRanking) { r.Date = "2026-2-28" },
	} {
		r := good
		mod(&r)
		if err := r.Validate(); err == nil || err.(*Error).Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}

func TestDecisionRunFinish(t *testing.T) {
	var r DecisionRun
	if ErrorCode(r.Finish("shop_1")) != CodeNotFound {
		t.Fatal("a run never started finished")
	}
	r.Apply(&DecisionRunStarted{RunID: "run_1", ShopID: "shop_1"})
	if r.Finish("shop_1") != nil || ErrorCode(r.Finish("shop_2")) != CodeNotFound {
		t.Fatal("started run")
	}
	r.Apply(&DecisionRunCompleted{RunID: "run_1"})
	if ErrorCode(r.Finish("shop_1")) != CodeConflict {
		t.Fatal("a completed run finished again")
	}
}
