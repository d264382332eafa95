package platformapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/domain"
)

// MaxRedirectAge bounds the age of a signed redirect (its timestamp): an
// install link or a callback older than this, or this far in the future,
// is refused.
const MaxRedirectAge = 24 * time.Hour

// AuthorizeURL is the platform's consent screen for shop: the app's client
// id, the declared scopes, the callback address and the state nonce. No
// grant_options: the token is the offline (shop-wide) one.
func (c *Client) AuthorizeURL(shop string, scopes []string, redirectURI, state string) (string, error) {
	u, err := c.shopURL(shop, "/admin/oauth/authorize")
	if err != nil {
		return "", err
	}
	q := url.Values{}
	q.Set("client_id", c.cfg.ClientID)
	q.Set("scope", strings.Join(scopes, ","))
	q.Set("redirect_uri", redirectURI)
	q.Set("state", state)
	return u + "?" + q.Encode(), nil
}

// Redirect errors. They say what was wrong without echoing the values.
var (
	ErrBadSignature = errors.New("the request's hmac does not verify")
	ErrStale        = errors.New("the request's timestamp is missing or too old")
	ErrBadShop      = errors.New("shop is not a shop domain of the platform")
)

// VerifyRedirect checks a redirect the platform signed (the install link
// and the OAuth callback): every query parameter but hmac (and the legacy
// signature), sorted by name, written name=value joined by &, signed with
// HMAC-SHA256 under the client secret, hex in the hmac parameter; a
// parameter given twice is refused (the platform never does it, a forger
// might to make two parsers disagree); the timestamp within
// MaxRedirectAge; the shop a valid shop domain. It returns the shop.
func (c *Client) VerifyRedirect(q url.Values) (string, error) {
	got := q.Get("hmac")
	if got == "" || len(q["hmac"]) != 1 {
		return "", ErrBadSignature
	}
	for k, vs := range q {
		if k != "hmac" && k != "signature" && len(vs) != 1 {
			return "", ErrBadSignature
		}
	}
	msg := signedMessage(q)
	want, err := hex.DecodeString(got)
	if err != nil || !hmac.Equal(want, c.sign(msg)) {
		return "", ErrBadSignature
	}
	ts, err := strconv.ParseInt(q.Get("timestamp"), 10, 64)
	now := c.cfg.Now()
	if err != nil || time.Unix(ts, 0).Before(now.Add(-MaxRedirectAge)) || time.Unix(ts, 0).After(now.Add(MaxRedirectAge)) {
		return "", ErrStale
	}
	shop := q.Get("shop")
	if !c.ValidShop(shop) {
		return "", ErrBadShop
	}
	return shop, nil
}

// escapeSigned escapes the characters the platform escapes in the signed
// message: % and & everywhere, = in names.
func escapeSigned(s string, name bool) string {
	s = strings.ReplaceAll(s, "%", "%25")
	s = strings.ReplaceAll(s, "&", "%26")
	if name {
		s = strings.ReplaceAll(s, "=", "%3D")
	}
	return s
}

func (c *Client) sign(msg string) []byte {
	m := hmac.New(sha256.New, []byte(c.cfg.ClientSecret))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// SignRedirect signs q the way the platform does (tests and the CLI's
// install link check use it); q gains its hmac.
func (c *Client) SignRedirect(q url.Values) {
	q.Del("hmac")
	q.Set("hmac", hex.EncodeToString(c.sign(signedMessage(q))))
}

// signedMessage is what the platform signs of a redirect: every parameter
// but hmac and signature, sorted by name, name=value joined by &, each
// first value escaped (escapeSigned).
func signedMessage(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "hmac" && k != "signature" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var msg strings.Builder
	for i, k := range keys {
		if i > 0 {
			msg.WriteByte('&')
		}
		msg.WriteString(escapeSigned(k, true) + "=" + escapeSigned(q.Get(k), false))
	}
	return msg.String()
}

// Token is an access token the token endpoint issued.
type Token struct {
	AccessToken  string
	RefreshToken string
	// Scopes is the granted scope list as the platform stores it (write_X
	// may stand for read_X too).
	Scopes []string
	// ExpiresAt and RefreshExpiresAt are zero for a token that does not
	// expire.
	ExpiresAt, RefreshExpiresAt time.Time
}

type tokenResponse struct {
	AccessToken           string `json:"access_token"`
	Scope                 string `json:"scope"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshToken          string `json:"refresh_token"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
}

func (c *Client) token(ctx context.Context, shop string, body map[string]any) (Token, error) {
	body["client_id"], body["client_secret"] = c.cfg.ClientID, c.cfg.ClientSecret
	var tr tokenResponse
	if err := c.post(ctx, shop, "/admin/oauth/access_token", nil, body, &tr); err != nil {
		return Token{}, err
	}
	if tr.AccessToken == "" || len(tr.AccessToken) > 1024 || len(tr.RefreshToken) > 1024 {
		return Token{}, &Error{Status: 200, Code: "bad_response", Message: "the token response has no usable access_token"}
	}
	now := c.cfg.Now().UTC()
	t := Token{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, Scopes: domain.ParsePlatformScopes(tr.Scope)}
	if tr.ExpiresIn > 0 {
		t.ExpiresAt = now.Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	if tr.RefreshTokenExpiresIn > 0 {
		t.RefreshExpiresAt = now.Add(time.Duration(tr.RefreshTokenExpiresIn) * time.Second)
	}
	return t, nil
}

// ExchangeCode trades the callback's authorization code for the shop's
// offline access token, asking for an expiring one (expiring=1: an hour,
// with a refresh token).
func (c *Client) ExchangeCode(ctx context.Context, shop, code string) (Token, error) {
	return c.token(ctx, shop, map[string]any{"code": code, "expiring": 1})
}

// Refresh trades a refresh token for a new access token (and a new
// refresh token: the platform replaces it at every use).
func (c *Client) Refresh(ctx context.Context, shop, refreshToken string) (Token, error) {
	return c.token(ctx, shop, map[string]any{"grant_type": "refresh_token", "refresh_token": refreshToken})
}
