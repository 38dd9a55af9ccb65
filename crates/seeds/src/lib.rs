//! Seed discovery's pure half: configuration, lean decoding and pod → address extraction.
#![deny(missing_docs)]
