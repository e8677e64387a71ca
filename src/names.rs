//! Random human-readable names (`magnum/common/name_generator.py`): a Greek letter and a
//! number, like `beta-2`.

const LETTERS: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi",
    "psi", "omega",
];

/// `NameGenerator.generate()`.
pub fn generate() -> String {
    let r = uuid::Uuid::new_v4().as_u128();
    let letter = LETTERS[(r % 24) as usize];
    let number = (r / 24 % 24) + 1;
    format!("{letter}-{number}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_look_like_magnums() {
        let n = super::generate();
        let (letter, number) = n.split_once('-').unwrap_or_default();
        assert!(super::LETTERS.contains(&letter));
        assert!((1..=24).contains(&number.parse::<u32>().unwrap_or(0)));
    }
}
