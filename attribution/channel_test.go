package attribution_test

import (
	"testing"

	"github.com/cgp-platform/cgp/attribution"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		name, landing, referrer string
		want                    attribution.Class
	}{
		// 1: Google and Microsoft ad click ids.
		{"gclid", "/products/shoe?gclid=Cj0KCQiA", "https://www.google.com/", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"gclid without referrer", "https://shop.example/?gclid=abc", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"gbraid iOS", "/?gbraid=0AAAAA", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"wbraid", "/?wbraid=CkQK", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"msclkid", "/?msclkid=5f1e&utm_source=bing&utm_medium=cpc&utm_campaign=Brand", "https://www.bing.com/", attribution.Class{Channel: attribution.PaidSearch, Source: "bing", Campaign: "Brand"}},
		{"msclkid alone", "/?msclkid=5f1e", "", attribution.Class{Channel: attribution.PaidSearch, Source: "bing"}},
		{"gclid beats utm email", "/?gclid=x&utm_medium=email", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"gclid with pmax utm", "/?utm_source=google&utm_medium=cpc&utm_campaign=pmax_all&gclid=x", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google", Campaign: "pmax_all"}},
		// 2: TikTok and LinkedIn click ids.
		{"ttclid", "/?ttclid=E.C.P.abc", "", attribution.Class{Channel: attribution.PaidSocial, Source: "tiktok"}},
		{"ttclid with source", "/?ttclid=x&utm_source=tiktok&utm_campaign=spring", "https://www.tiktok.com/", attribution.Class{Channel: attribution.PaidSocial, Source: "tiktok", Campaign: "spring"}},
		{"li_fat_id", "/?li_fat_id=7c3b", "https://www.linkedin.com/", attribution.Class{Channel: attribution.PaidSocial, Source: "linkedin"}},
		// 3: paid search by UTM.
		{"google cpc", "/?utm_source=google&utm_medium=cpc&utm_campaign=brand_fr", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google", Campaign: "brand_fr"}},
		{"Google CPC case", "/?UTM_SOURCE=Google&UTM_MEDIUM=CPC", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"bing ppc", "/?utm_source=bing&utm_medium=ppc", "", attribution.Class{Channel: attribution.PaidSearch, Source: "bing"}},
		{"adwords alias", "/?utm_source=adwords&utm_medium=cpc", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"host as source", "/?utm_source=www.google.com&utm_medium=cpc", "", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"paidsearch medium alone", "/?utm_source=acme_agency&utm_medium=paidsearch", "", attribution.Class{Channel: attribution.PaidSearch, Source: "acme_agency"}},
		{"paid-search medium", "/?utm_medium=Paid-Search", "", attribution.Class{Channel: attribution.PaidSearch}},
		{"cpc with google referrer", "/?utm_medium=cpc", "https://www.google.de/", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"googleadservices redirect", "/", "https://www.googleadservices.com/pagead/aclk?sa=L", attribution.Class{Channel: attribution.PaidSearch, Source: "google"}},
		{"yahoo japan cpc", "/?utm_source=yahoo&utm_medium=cpc", "https://search.yahoo.co.jp/", attribution.Class{Channel: attribution.PaidSearch, Source: "yahoo"}},
		// 4: paid social by UTM.
		{"facebook paid", "/?utm_source=facebook&utm_medium=paid&utm_campaign=retargeting_q3", "https://l.facebook.com/", attribution.Class{Channel: attribution.PaidSocial, Source: "facebook", Campaign: "retargeting_q3"}},
		{"fb cpc", "/?utm_source=fb&utm_medium=cpc", "", attribution.Class{Channel: attribution.PaidSocial, Source: "facebook"}},
		{"ig paid_social", "/?utm_source=ig&utm_medium=paid_social&fbclid=IwAR", "https://l.instagram.com/", attribution.Class{Channel: attribution.PaidSocial, Source: "instagram"}},
		{"meta cpm", "/?utm_source=meta&utm_medium=cpm", "", attribution.Class{Channel: attribution.PaidSocial, Source: "meta"}},
		{"paid social medium alone", "/?utm_source=agency&utm_medium=Paid Social", "", attribution.Class{Channel: attribution.PaidSocial, Source: "agency"}},
		{"pinterest ads", "/?utm_source=pinterest&utm_medium=paid", "https://www.pinterest.fr/", attribution.Class{Channel: attribution.PaidSocial, Source: "pinterest"}},
		{"youtube cpv", "/?utm_source=youtube&utm_medium=cpv", "", attribution.Class{Channel: attribution.PaidSocial, Source: "youtube"}},
		// 5: display.
		{"display medium", "/?utm_source=gdn&utm_medium=display&utm_campaign=remarketing", "", attribution.Class{Channel: attribution.Display, Source: "gdn", Campaign: "remarketing"}},
		{"banner", "/?utm_source=partner_site&utm_medium=banner", "", attribution.Class{Channel: attribution.Display, Source: "partner_site"}},
		{"criteo cpm", "/?utm_source=criteo&utm_medium=cpm", "", attribution.Class{Channel: attribution.Display, Source: "criteo"}},
		{"doubleclick referrer", "/", "https://ad.doubleclick.net/ddm/clk/123", attribution.Class{Channel: attribution.Display, Source: "google"}},
		// 6: e-mail.
		{"klaviyo flow", "/?utm_source=Klaviyo&utm_medium=email&utm_campaign=Abandoned Cart", "", attribution.Class{Channel: attribution.Email, Source: "klaviyo", Campaign: "Abandoned Cart"}},
		{"klaviyo without medium", "/?utm_source=klaviyo&utm_campaign=welcome", "", attribution.Class{Channel: attribution.Email, Source: "klaviyo", Campaign: "welcome"}},
		{"mailchimp", "/?utm_source=mailchimp&utm_campaign=nov", "", attribution.Class{Channel: attribution.Email, Source: "mailchimp", Campaign: "nov"}},
		{"e-mail medium", "/?utm_source=crm&utm_medium=E-Mail", "", attribution.Class{Channel: attribution.Email, Source: "crm"}},
		{"newsletter medium", "/?utm_source=weekly&utm_medium=newsletter", "", attribution.Class{Channel: attribution.Email, Source: "weekly"}},
		{"gmail referrer", "/", "https://mail.google.com/", attribution.Class{Channel: attribution.Email, Source: "gmail"}},
		{"gmail app referrer", "/", "android-app://com.google.android.gm/", attribution.Class{Channel: attribution.Email, Source: "gmail"}},
		{"outlook referrer", "/sale", "https://outlook.live.com/mail/0/inbox", attribution.Class{Channel: attribution.Email, Source: "outlook"}},
		{"email beats facebook source", "/?utm_source=facebook&utm_medium=email", "", attribution.Class{Channel: attribution.Email, Source: "facebook"}},
		{"unknown source, webmail referrer", "/?utm_source=spring_news", "https://mail.yahoo.com/d/folders/1", attribution.Class{Channel: attribution.Email, Source: "spring_news"}},
		// 7: SMS.
		{"postscript", "/?utm_source=postscript&utm_medium=sms&utm_campaign=bfcm", "", attribution.Class{Channel: attribution.SMS, Source: "postscript", Campaign: "bfcm"}},
		{"attentive", "/?utm_source=attentive&utm_campaign=drop", "", attribution.Class{Channel: attribution.SMS, Source: "attentive", Campaign: "drop"}},
		{"text medium", "/?utm_source=crm&utm_medium=text", "", attribution.Class{Channel: attribution.SMS, Source: "crm"}},
		// 8: WhatsApp.
		{"whatsapp utm", "/?utm_source=whatsapp&utm_medium=message&utm_campaign=restock", "", attribution.Class{Channel: attribution.WhatsApp, Source: "whatsapp", Campaign: "restock"}},
		{"whatsapp medium", "/?utm_source=cgp&utm_medium=whatsapp", "", attribution.Class{Channel: attribution.WhatsApp, Source: "cgp"}},
		{"wa.me referrer", "/", "https://wa.me/", attribution.Class{Channel: attribution.WhatsApp, Source: "whatsapp"}},
		{"web.whatsapp referrer", "/p/1", "https://web.whatsapp.com/", attribution.Class{Channel: attribution.WhatsApp, Source: "whatsapp"}},
		{"whatsapp app referrer", "/", "android-app://com.whatsapp/", attribution.Class{Channel: attribution.WhatsApp, Source: "whatsapp"}},
		// 9: affiliate.
		{"affiliate medium", "/?utm_source=blogger42&utm_medium=affiliate", "", attribution.Class{Channel: attribution.Affiliate, Source: "blogger42"}},
		{"awin source", "/?utm_source=awin&utm_medium=cps", "", attribution.Class{Channel: attribution.Affiliate, Source: "awin"}},
		{"awin redirect", "/", "https://www.awin1.com/cread.php?awinmid=1", attribution.Class{Channel: attribution.Affiliate, Source: "awin"}},
		// 10: other paid.
		{"paid unknown source", "/?utm_source=podcast_x&utm_medium=cpa", "", attribution.Class{Channel: attribution.Other, Source: "podcast_x"}},
		// 11: organic social by medium beats fbclid.
		{"facebook organic post", "/?utm_source=facebook&utm_medium=social&fbclid=IwAR2", "https://m.facebook.com/", attribution.Class{Channel: attribution.OrganicSocial, Source: "facebook"}},
		{"social medium unknown source", "/?utm_source=bio_link&utm_medium=social", "", attribution.Class{Channel: attribution.OrganicSocial, Source: "bio_link"}},
		// 12: fbclid.
		{"fbclid", "/?fbclid=IwAR0abc", "https://l.facebook.com/", attribution.Class{Channel: attribution.PaidSocial, Source: "facebook"}},
		{"fbclid no referrer", "/?fbclid=IwAR0abc", "", attribution.Class{Channel: attribution.PaidSocial, Source: "facebook"}},
		{"fbclid from instagram", "/?fbclid=PAAa", "https://l.instagram.com/", attribution.Class{Channel: attribution.PaidSocial, Source: "instagram"}},
		// 13: organic search.
		{"google organic", "/products/shoe", "https://www.google.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}},
		{"google.co.uk", "/", "https://www.google.co.uk/", attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}},
		{"google.com.br", "/", "https://google.com.br/", attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}},
		{"google app", "/", "android-app://com.google.android.googlequicksearchbox/https/www.google.com", attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}},
		{"bing", "/", "https://www.bing.com/search?q=shoes", attribution.Class{Channel: attribution.OrganicSearch, Source: "bing"}},
		{"cn.bing", "/", "https://cn.bing.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "bing"}},
		{"duckduckgo", "/", "https://duckduckgo.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "duckduckgo"}},
		{"ecosia", "/", "https://www.ecosia.org/", attribution.Class{Channel: attribution.OrganicSearch, Source: "ecosia"}},
		{"yahoo", "/", "https://search.yahoo.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "yahoo"}},
		{"uk yahoo", "/", "https://uk.search.yahoo.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "yahoo"}},
		{"yandex.ru", "/", "https://yandex.ru/", attribution.Class{Channel: attribution.OrganicSearch, Source: "yandex"}},
		{"baidu", "/", "https://www.baidu.com/link?url=x", attribution.Class{Channel: attribution.OrganicSearch, Source: "baidu"}},
		{"brave search", "/", "https://search.brave.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "brave"}},
		{"google organic utm", "/?utm_source=google&utm_medium=organic", "", attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}},
		{"google shopping free listing", "/?srsltid=AfmBOo&utm_source=google&utm_campaign=sag_organic", "https://www.google.com/", attribution.Class{Channel: attribution.OrganicSearch, Source: "google", Campaign: "sag_organic"}},
		{"referrer port and dot", "/", "https://WWW.GOOGLE.COM.:443/url", attribution.Class{Channel: attribution.OrganicSearch, Source: "google"}},
		// 14: organic social.
		{"facebook referrer", "/", "https://l.facebook.com/l.php?u=x", attribution.Class{Channel: attribution.OrganicSocial, Source: "facebook"}},
		{"instagram referrer", "/", "https://www.instagram.com/", attribution.Class{Channel: attribution.OrganicSocial, Source: "instagram"}},
		{"t.co", "/", "https://t.co/abc", attribution.Class{Channel: attribution.OrganicSocial, Source: "x"}},
		{"linkedin", "/", "https://www.linkedin.com/feed/", attribution.Class{Channel: attribution.OrganicSocial, Source: "linkedin"}},
		{"lnkd.in", "/", "https://lnkd.in/eXyz", attribution.Class{Channel: attribution.OrganicSocial, Source: "linkedin"}},
		{"reddit out", "/", "https://out.reddit.com/t3_abc", attribution.Class{Channel: attribution.OrganicSocial, Source: "reddit"}},
		{"youtube", "/", "https://m.youtube.com/", attribution.Class{Channel: attribution.OrganicSocial, Source: "youtube"}},
		{"pinterest.de", "/", "https://www.pinterest.de/", attribution.Class{Channel: attribution.OrganicSocial, Source: "pinterest"}},
		{"pin.it", "/", "https://pin.it/3xyz", attribution.Class{Channel: attribution.OrganicSocial, Source: "pinterest"}},
		{"tiktok referrer", "/", "https://www.tiktok.com/", attribution.Class{Channel: attribution.OrganicSocial, Source: "tiktok"}},
		{"instagram utm no medium", "/?utm_source=instagram&utm_campaign=bio", "", attribution.Class{Channel: attribution.OrganicSocial, Source: "instagram", Campaign: "bio"}},
		{"facebook app", "/", "android-app://com.facebook.katana/", attribution.Class{Channel: attribution.OrganicSocial, Source: "facebook"}},
		// 15: medium organic, unknown source.
		{"organic unknown source", "/?utm_source=mysearch&utm_medium=organic", "", attribution.Class{Channel: attribution.OrganicSearch, Source: "mysearch"}},
		// 16: referral.
		{"blog referrer", "/products/x", "https://www.someblog.example/review", attribution.Class{Channel: attribution.Referral, Source: "someblog.example"}},
		{"google docs is referral", "/", "https://docs.google.com/document/d/1", attribution.Class{Channel: attribution.Referral, Source: "docs.google.com"}},
		{"notfacebook", "/", "https://notfacebook.com/", attribution.Class{Channel: attribution.Referral, Source: "notfacebook.com"}},
		{"bare host referrer", "/", "news.ycombinator.com", attribution.Class{Channel: attribution.Referral, Source: "news.ycombinator.com"}},
		{"referral medium", "/?utm_source=partnerblog&utm_medium=referral", "", attribution.Class{Channel: attribution.Referral, Source: "partnerblog"}},
		{"chatgpt utm and referrer", "/?utm_source=chatgpt.com", "https://chatgpt.com/", attribution.Class{Channel: attribution.Referral, Source: "chatgpt.com"}},
		{"chatgpt referrer", "/", "https://chatgpt.com/", attribution.Class{Channel: attribution.Referral, Source: "chatgpt.com"}},
		// Payment round trips are no referrer.
		{"paypal return", "/checkouts/thank_you", "https://www.paypal.com/checkoutnow", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		{"paypal utm return", "/thank_you?utm_source=paypal.com&utm_medium=referral", "", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		{"stripe 3ds", "/", "https://hooks.stripe.com/3d_secure", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		// 17: other.
		{"campaign only", "/?utm_campaign=qr_flyer", "", attribution.Class{Channel: attribution.Other, Campaign: "qr_flyer"}},
		{"unknown source only", "/?utm_source=qr", "", attribution.Class{Channel: attribution.Other, Source: "qr"}},
		{"unknown medium", "/?utm_source=print&utm_medium=offline", "", attribution.Class{Channel: attribution.Other, Source: "print"}},
		// 18: direct.
		{"nothing", "/", "", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		{"empty", "", "", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		{"other params only", "/?ref=abc&variant=1", "", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		{"empty utm values", "/?utm_source=&utm_medium=", "", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
		{"malformed referrer", "/", "https://exa mple.com/", attribution.Class{Channel: attribution.Direct, Source: "direct"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := attribution.Classify(attribution.ParseLanding(c.landing, c.referrer))
			if got != c.want {
				t.Fatalf("Classify(%q, %q) = %+v, want %+v", c.landing, c.referrer, got, c.want)
			}
		})
	}
}

func TestParseLanding(t *testing.T) {
	cases := []struct {
		name, landing, referrer string
		want                    attribution.Landing
	}{
		{"order landing site", "/products/shoe?utm_source=google&utm_medium=cpc&gclid=abc", "https://www.google.com/search?q=shoe",
			attribution.Landing{Path: "/products/shoe", UTM: attribution.UTM{Source: "google", Medium: "cpc"}, ClickIDs: attribution.ClickIDs{GCLID: "abc"}, ReferrerHost: "google.com"}},
		{"absolute URL, fragment, other params", "https://shop.example/a/b?email=x%40y.z&utm_campaign=Summer+Sale&utm_term=red%20shoes#utm_source=frag", "",
			attribution.Landing{Path: "/a/b", UTM: attribution.UTM{Campaign: "Summer Sale", Term: "red shoes"}}},
		{"every parameter", "/?utm_source=s&utm_medium=m&utm_campaign=c&utm_term=t&utm_content=ct&gclid=1&gbraid=2&wbraid=3&fbclid=4&ttclid=5&msclkid=6&li_fat_id=7", "",
			attribution.Landing{Path: "/", UTM: attribution.UTM{Source: "s", Medium: "m", Campaign: "c", Term: "t", Content: "ct"},
				ClickIDs: attribution.ClickIDs{GCLID: "1", GBRAID: "2", WBRAID: "3", FBCLID: "4", TTCLID: "5", MSCLKID: "6", LiFatID: "7"}}},
		{"first non-empty value, trimmed", "/?utm_source=&utm_source=+news+&utm_source=later", "",
			attribution.Landing{Path: "/", UTM: attribution.UTM{Source: "news"}}},
		{"upper-case names sort first", "/?utm_source=lower&UTM_SOURCE=upper", "",
			attribution.Landing{Path: "/", UTM: attribution.UTM{Source: "upper"}}},
		{"bare query", "?utm_medium=email", "", attribution.Landing{UTM: attribution.UTM{Medium: "email"}}},
		{"relative path gets a slash", "products/x", "", attribution.Landing{Path: "/products/x"}},
		{"bad escape keeps good pairs", "/?utm_source=ok&utm_medium=%zz", "", attribution.Landing{Path: "/", UTM: attribution.UTM{Source: "ok"}}},
		{"semicolon pair dropped", "/?utm_source=a;b&utm_campaign=c", "", attribution.Landing{Path: "/", UTM: attribution.UTM{Campaign: "c"}}},
		{"value over 512 bytes dropped", "/?utm_campaign=" + longValue(513), "", attribution.Landing{Path: "/"}},
		{"userinfo and port", "", "https://user:pw@Sub.Example.COM:8443/x", attribution.Landing{ReferrerHost: "sub.example.com"}},
		{"IPv6 referrer", "", "http://[2001:db8::1]:80/", attribution.Landing{ReferrerHost: "2001:db8::1"}},
		{"protocol-relative referrer", "", "//www.bing.com/search", attribution.Landing{ReferrerHost: "bing.com"}},
		{"referrer with space", "", "https://a b.com/", attribution.Landing{}},
		{"unicode host kept", "", "https://bücher.de/", attribution.Landing{ReferrerHost: "bücher.de"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := attribution.ParseLanding(c.landing, c.referrer); got != c.want {
				t.Fatalf("ParseLanding(%q, %q) =\n%+v, want\n%+v", c.landing, c.referrer, got, c.want)
			}
		})
	}
}

func longValue(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return string(b)
}
