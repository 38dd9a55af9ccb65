//! `PodSeeds`: seed discovery through the apiserver (list and watch modes).
