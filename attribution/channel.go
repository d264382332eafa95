package attribution

import (
	"strings"
)

// Channel is the marketing channel of a touchpoint.
type Channel string

// Channels, in the order of the rules that assign them (see Classify).
const (
	PaidSearch    Channel = "paid_search"
	PaidSocial    Channel = "paid_social"
	Display       Channel = "display"
	Email         Channel = "email"
	SMS           Channel = "sms"
	WhatsApp      Channel = "whatsapp"
	Affiliate     Channel = "affiliate"
	OrganicSearch Channel = "organic_search"
	OrganicSocial Channel = "organic_social"
	Referral      Channel = "referral"
	Other         Channel = "other"
	Direct        Channel = "direct"
)

// Channels returns every channel.
func Channels() []Channel {
	return []Channel{PaidSearch, PaidSocial, Display, Email, SMS, WhatsApp, Affiliate,
		OrganicSearch, OrganicSocial, Referral, Other, Direct}
}

// Class is what a touchpoint is credited under: its channel, its source and
// its campaign.
type Class struct {
	Channel Channel `json:"channel"`
	// Source is the normalised utm_source (lower case; a known alias or host
	// mapped to its site's name: "fb" and "m.facebook.com" are "facebook"),
	// else the referrer's site name or host, else the network a click id
	// belongs to ("google" for a gclid); "direct" for direct; "" when
	// nothing names a source.
	Source string `json:"source"`
	// Campaign is utm_campaign as sent (trimmed), "" without one.
	Campaign string `json:"campaign,omitempty"`
}

// siteKind is what a source or referrer is.
type siteKind uint8

const (
	siteUnknown siteKind = iota
	siteSearch
	siteSearchAds // a search ad click's redirect (googleadservices.com)
	siteSocial
	siteDisplay
	siteEmail
	siteSMS
	siteWhatsApp
	siteAffiliate
	siteIgnored // payment, login and checkout hosts: not a visit's origin
)

// site is a known source: its canonical name and kind.
type site struct {
	name string
	kind siteKind
}

// knownHosts maps hosts (and every subdomain of them; android-app package
// names too) to sites. More specific hosts win (mail.google.com over the
// google.<tld> rule, which only matches the bare search host).
var knownHosts = map[string]site{
	// Webmail: the visitor clicked a link in an e-mail.
	"mail.google.com": {"gmail", siteEmail}, "inbox.google.com": {"gmail", siteEmail},
	"com.google.android.gm": {"gmail", siteEmail}, "mail.yahoo.com": {"yahoo_mail", siteEmail},
	"outlook.live.com": {"outlook", siteEmail}, "outlook.office.com": {"outlook", siteEmail},
	"outlook.office365.com": {"outlook", siteEmail}, "com.microsoft.office.outlook": {"outlook", siteEmail},
	"mail.aol.com": {"aol_mail", siteEmail}, "mail.proton.me": {"proton_mail", siteEmail},
	// Ad redirects.
	"googleadservices.com": {"google", siteSearchAds}, "syndicatedsearch.goog": {"google", siteSearchAds},
	"doubleclick.net": {"google", siteDisplay}, "googlesyndication.com": {"google", siteDisplay},
	"criteo.com": {"criteo", siteDisplay}, "taboola.com": {"taboola", siteDisplay}, "outbrain.com": {"outbrain", siteDisplay},
	// Search engines.
	"com.google.android.googlequicksearchbox": {"google", siteSearch},
	"bing.com": {"bing", siteSearch}, "duckduckgo.com": {"duckduckgo", siteSearch}, "baidu.com": {"baidu", siteSearch},
	"ya.ru": {"yandex", siteSearch}, "ecosia.org": {"ecosia", siteSearch}, "naver.com": {"naver", siteSearch},
	"seznam.cz": {"seznam", siteSearch}, "qwant.com": {"qwant", siteSearch}, "startpage.com": {"startpage", siteSearch},
	"search.brave.com": {"brave", siteSearch}, "ask.com": {"ask", siteSearch}, "search.aol.com": {"aol", siteSearch},
	"sogou.com": {"sogou", siteSearch}, "so.com": {"so", siteSearch}, "search.yahoo.com": {"yahoo", siteSearch},
	"yahoo.co.jp": {"yahoo", siteSearch}, "daum.net": {"daum", siteSearch},
	// Social networks.
	"facebook.com": {"facebook", siteSocial}, "fb.com": {"facebook", siteSocial}, "fb.me": {"facebook", siteSocial},
	"messenger.com": {"facebook", siteSocial}, "com.facebook.katana": {"facebook", siteSocial},
	"com.facebook.orca": {"facebook", siteSocial}, "instagram.com": {"instagram", siteSocial},
	"com.instagram.android": {"instagram", siteSocial}, "t.co": {"x", siteSocial}, "twitter.com": {"x", siteSocial},
	"x.com": {"x", siteSocial}, "com.twitter.android": {"x", siteSocial}, "linkedin.com": {"linkedin", siteSocial},
	"lnkd.in": {"linkedin", siteSocial}, "com.linkedin.android": {"linkedin", siteSocial},
	"pin.it": {"pinterest", siteSocial}, "com.pinterest": {"pinterest", siteSocial},
	"reddit.com": {"reddit", siteSocial}, "com.reddit.frontpage": {"reddit", siteSocial},
	"tiktok.com": {"tiktok", siteSocial}, "com.zhiliaoapp.musically": {"tiktok", siteSocial},
	"youtube.com": {"youtube", siteSocial}, "youtu.be": {"youtube", siteSocial},
	"com.google.android.youtube": {"youtube", siteSocial}, "snapchat.com": {"snapchat", siteSocial},
	"threads.net": {"threads", siteSocial}, "threads.com": {"threads", siteSocial}, "tumblr.com": {"tumblr", siteSocial},
	"vk.com": {"vk", siteSocial}, "weibo.com": {"weibo", siteSocial}, "quora.com": {"quora", siteSocial},
	"t.me": {"telegram", siteSocial}, "telegram.org": {"telegram", siteSocial}, "discord.com": {"discord", siteSocial},
	"discord.gg": {"discord", siteSocial}, "bsky.app": {"bluesky", siteSocial}, "mastodon.social": {"mastodon", siteSocial},
	// WhatsApp.
	"wa.me": {"whatsapp", siteWhatsApp}, "whatsapp.com": {"whatsapp", siteWhatsApp}, "com.whatsapp": {"whatsapp", siteWhatsApp},
	// Affiliate networks' click redirects.
	"awin1.com": {"awin", siteAffiliate}, "shareasale.com": {"shareasale", siteAffiliate},
	"anrdoezrs.net": {"cj", siteAffiliate}, "dpbolvw.net": {"cj", siteAffiliate}, "jdoqocy.com": {"cj", siteAffiliate},
	"kqzyfj.com": {"cj", siteAffiliate}, "tkqlhce.com": {"cj", siteAffiliate}, "linksynergy.com": {"rakuten", siteAffiliate},
	"prf.hn": {"partnerize", siteAffiliate}, "skimresources.com": {"skimlinks", siteAffiliate},
	// Payment, login and checkout round trips (GA's "unwanted referrals").
	"paypal.com": {"paypal", siteIgnored}, "checkout.stripe.com": {"stripe", siteIgnored},
	"hooks.stripe.com": {"stripe", siteIgnored}, "klarna.com": {"klarna", siteIgnored},
	"afterpay.com": {"afterpay", siteIgnored}, "clearpay.co.uk": {"clearpay", siteIgnored},
	"affirm.com": {"affirm", siteIgnored}, "shop.app": {"shop_pay", siteIgnored},
	"checkout.shopify.com": {"shopify_checkout", siteIgnored}, "accounts.google.com": {"google_accounts", siteIgnored},
	"appleid.apple.com": {"apple_id", siteIgnored},
}

// brandHosts are sites reached under many country domains: google.de,
// google.co.uk, yahoo.com, yandex.ru, pinterest.fr, … (the brand followed by
// one or two labels of two or three letters, after "www." is dropped).
var brandHosts = []struct {
	brand string
	site  site
}{
	{"google", site{"google", siteSearch}},
	{"yahoo", site{"yahoo", siteSearch}},
	{"yandex", site{"yandex", siteSearch}},
	{"pinterest", site{"pinterest", siteSocial}},
}

// knownSources maps utm_source values (lower case) to sites: site names
// and common aliases.
var knownSources = map[string]site{
	"fb": {"facebook", siteSocial}, "ig": {"instagram", siteSocial}, "insta": {"instagram", siteSocial},
	"meta": {"meta", siteSocial}, "twitter": {"x", siteSocial}, "tw": {"x", siteSocial}, "li": {"linkedin", siteSocial},
	"yt": {"youtube", siteSocial}, "adwords": {"google", siteSearch}, "google_ads": {"google", siteSearch},
	"googleads": {"google", siteSearch}, "bing_ads": {"bing", siteSearch}, "microsoft": {"bing", siteSearch},
	"microsoft_ads": {"bing", siteSearch},
	// E-mail service providers.
	"klaviyo": {"klaviyo", siteEmail}, "mailchimp": {"mailchimp", siteEmail}, "omnisend": {"omnisend", siteEmail},
	"brevo": {"brevo", siteEmail}, "sendinblue": {"brevo", siteEmail}, "activecampaign": {"activecampaign", siteEmail},
	"campaignmonitor": {"campaignmonitor", siteEmail}, "constantcontact": {"constantcontact", siteEmail},
	"convertkit": {"convertkit", siteEmail}, "drip": {"drip", siteEmail}, "mailerlite": {"mailerlite", siteEmail},
	"sendgrid": {"sendgrid", siteEmail}, "shopify_email": {"shopify_email", siteEmail},
	"newsletter": {"newsletter", siteEmail}, "email": {"email", siteEmail}, "e-mail": {"email", siteEmail},
	// SMS providers.
	"postscript": {"postscript", siteSMS}, "attentive": {"attentive", siteSMS}, "smsbump": {"smsbump", siteSMS},
	"sms": {"sms", siteSMS},
	"wa":  {"whatsapp", siteWhatsApp},
	// Affiliate networks.
	"awin": {"awin", siteAffiliate}, "impact": {"impact", siteAffiliate}, "cj": {"cj", siteAffiliate},
	"shareasale": {"shareasale", siteAffiliate}, "rakuten": {"rakuten", siteAffiliate},
	"partnerize": {"partnerize", siteAffiliate}, "tradedoubler": {"tradedoubler", siteAffiliate},
	"skimlinks": {"skimlinks", siteAffiliate}, "refersion": {"refersion", siteAffiliate},
	"dv360": {"dv360", siteDisplay},
}

// siteNames maps every canonical site name to its site, so that a
// utm_source "google" or "instagram" is recognised as the host would be.
var siteNames = func() map[string]site {
	m := map[string]site{}
	for _, s := range knownHosts {
		m[s.name] = s // one kind per name, but google's (set below)
	}
	for _, b := range brandHosts {
		m[b.site.name] = b.site
	}
	for _, s := range knownSources {
		m[s.name] = s
	}
	m["google"] = site{"google", siteSearch} // not its ad redirects
	return m
}()

// hostSite returns the site of a normalised host: the most specific known
// host it is or is a subdomain of, else a brand under a country domain.
func hostSite(h string) (site, bool) {
	for d := h; d != ""; {
		if s, ok := knownHosts[d]; ok {
			return s, true
		}
		i := strings.IndexByte(d, '.')
		if i < 0 {
			break
		}
		d = d[i+1:]
	}
	for _, b := range brandHosts {
		if rest, ok := strings.CutPrefix(h, b.brand+"."); ok && countryDomain(rest) {
			return b.site, true
		}
	}
	return site{}, false
}

// countryDomain reports whether s is one or two labels of two or three
// letters ("de", "com", "co.uk", "com.br").
func countryDomain(s string) bool {
	labels := strings.Split(s, ".")
	if len(labels) > 2 {
		return false
	}
	for _, l := range labels {
		if len(l) < 2 || len(l) > 3 {
			return false
		}
		for i := 0; i < len(l); i++ {
			if l[i] < 'a' || l[i] > 'z' {
				return false
			}
		}
	}
	return true
}

// sourceSite normalises a utm_source: lower case, trimmed; a host-like
// value ("www.google.com") is read as a host; aliases and site names map to
// their site. An unknown source keeps its normalised value as name.
func sourceSite(src string) site {
	s := strings.ToLower(strings.TrimSpace(src))
	if st, ok := knownSources[s]; ok {
		return st
	}
	if st, ok := siteNames[s]; ok {
		return st
	}
	if strings.Contains(s, ".") {
		if h := normalizeHost(s); h != "" {
			if st, ok := hostSite(h); ok {
				return st
			}
			return site{name: h}
		}
	}
	return site{name: s}
}

// normalizeMedium lower-cases a utm_medium and writes spaces and dashes as
// underscores ("Paid Social", "paid-social" → "paid_social").
func normalizeMedium(m string) string {
	m = strings.ToLower(strings.TrimSpace(m))
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, m)
}

// Medium groups.
var (
	mediaPaidSearch = set("paidsearch", "paid_search", "sem", "search_ads")
	mediaPaidSocial = set("paidsocial", "paid_social", "social_paid", "socialpaid", "social_ads")
	mediaDisplay    = set("display", "banner", "expandable", "interstitial", "cpm", "programmatic")
	mediaEmail      = set("email", "e_mail", "e_mail_marketing", "newsletter", "mail")
	mediaSMS        = set("sms", "text", "mms")
	mediaWhatsApp   = set("whatsapp", "wa")
	mediaAffiliate  = set("affiliate", "affiliates", "partner", "partners")
	mediaSocial     = set("social", "social_network", "social_media", "sm", "organic_social")
	mediaReferral   = set("referral", "link", "app")
)

func set(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}

// paidMedium is GA4's paid medium pattern: ^(.*cp.*|ppc|retargeting|paid.*)$.
func paidMedium(m string) bool {
	return strings.Contains(m, "cp") || m == "ppc" || m == "retargeting" || strings.HasPrefix(m, "paid")
}

// Classify returns the channel, source and campaign of a landing. The first
// rule that matches decides the channel ("source" is utm_source when it
// names a known site, else the referrer's site; "paid medium" is
// utm_medium matching GA4's ^(.*cp.*|ppc|retargeting|paid.*)$):
//
//	 #  channel         rule
//	 1  paid_search     click id gclid, gbraid, wbraid or msclkid
//	 2  paid_social     click id ttclid or li_fat_id
//	 3  paid_search     medium paidsearch/paid_search/sem/search_ads; or a paid medium
//	                    and a search-engine source; or a search-ad redirect referrer
//	                    (googleadservices.com, syndicatedsearch.goog)
//	 4  paid_social     medium paidsocial/paid_social/social_paid/social_ads; or a
//	                    paid medium and a social-network source
//	 5  display         medium display/banner/cpm/expandable/interstitial/programmatic;
//	                    or a display-network source (doubleclick, criteo, taboola, …)
//	 6  email           medium email/e-mail/newsletter/mail; or an e-mail tool source
//	                    (klaviyo, mailchimp, omnisend, …) or a webmail referrer
//	                    (mail.google.com, outlook.live.com, the Gmail app, …)
//	 7  sms             medium sms/text/mms; or an SMS tool source (postscript, attentive, …)
//	 8  whatsapp        medium or source whatsapp/wa; or referrer wa.me/whatsapp.com
//	 9  affiliate       medium affiliate(s)/partner(s); or an affiliate network source
//	10  other           any other paid medium (GA4's "Paid Other")
//	11  organic_social  medium social/social-network/social-media/sm/organic_social
//	12  paid_social     click id fbclid (Meta adds it to organic link clicks too:
//	                    tag organic posts utm_medium=social to keep them organic)
//	13  organic_search  a search-engine source (utm_source or referrer)
//	14  organic_social  a social-network source (utm_source or referrer)
//	15  organic_search  medium organic
//	16  referral        medium referral/link/app; or any other external referrer
//	17  other           any UTM parameter left (GA4's "Unassigned")
//	18  direct          nothing of the above
//
// Referrers that are payment, login or checkout round trips (paypal.com,
// checkout.stripe.com, klarna.com, shop.app, accounts.google.com, …) are
// treated as no referrer.
func Classify(l Landing) Class {
	c := Class{Campaign: strings.TrimSpace(l.UTM.Campaign)}
	medium := normalizeMedium(l.UTM.Medium)
	var src site
	hasSource := strings.TrimSpace(l.UTM.Source) != ""
	if hasSource {
		src = sourceSite(l.UTM.Source)
		if src.kind == siteIgnored {
			// A payment page sending the visitor back with
			// utm_source=paypal.com&utm_medium=referral.
			src, hasSource = site{}, false
			if mediaReferral[medium] {
				medium = ""
			}
		}
	}
	var ref site
	hasRef := l.ReferrerHost != ""
	if hasRef {
		if s, ok := hostSite(l.ReferrerHost); ok {
			ref = s
		} else {
			ref = site{name: l.ReferrerHost}
		}
		if ref.kind == siteIgnored {
			ref, hasRef = site{}, false
		}
	}
	kind := src.kind
	if kind == siteUnknown {
		kind = ref.kind
	}
	switch {
	case hasSource:
		c.Source = src.name
	case hasRef:
		c.Source = ref.name
	}
	ids := l.ClickIDs
	clickSource := func(name string) {
		if c.Source == "" {
			c.Source = name
		}
	}
	paid := paidMedium(medium)
	switch {
	case ids.GCLID != "" || ids.GBRAID != "" || ids.WBRAID != "":
		c.Channel = PaidSearch
		clickSource("google")
	case ids.MSCLKID != "":
		c.Channel = PaidSearch
		clickSource("bing")
	case ids.TTCLID != "":
		c.Channel = PaidSocial
		clickSource("tiktok")
	case ids.LiFatID != "":
		c.Channel = PaidSocial
		clickSource("linkedin")
	case mediaPaidSearch[medium] || paid && kind == siteSearch || kind == siteSearchAds:
		c.Channel = PaidSearch
	case mediaPaidSocial[medium] || paid && kind == siteSocial:
		c.Channel = PaidSocial
	case mediaDisplay[medium] || kind == siteDisplay:
		c.Channel = Display
	case mediaEmail[medium] || kind == siteEmail:
		c.Channel = Email
	case mediaSMS[medium] || kind == siteSMS:
		c.Channel = SMS
	case mediaWhatsApp[medium] || kind == siteWhatsApp:
		c.Channel = WhatsApp
	case mediaAffiliate[medium] || kind == siteAffiliate:
		c.Channel = Affiliate
	case paid:
		c.Channel = Other
	case mediaSocial[medium]:
		c.Channel = OrganicSocial
	case ids.FBCLID != "":
		c.Channel = PaidSocial
		clickSource("facebook")
	case kind == siteSearch:
		c.Channel = OrganicSearch
	case kind == siteSocial:
		c.Channel = OrganicSocial
	case medium == "organic":
		c.Channel = OrganicSearch
	case mediaReferral[medium] || hasRef:
		c.Channel = Referral
	case hasSource || medium != "" || c.Campaign != "" || l.UTM.Term != "" || l.UTM.Content != "":
		c.Channel = Other
	default:
		c.Channel = Direct
		c.Source = "direct"
	}
	return c
}
