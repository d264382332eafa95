// Package reviews holds the product reviews' parts that other features
// use: today the review token, the signed proof of purchase a review
// request carries and the storefront reviews endpoint accepts.
//
// It imports internal/signedtoken only.
package reviews
