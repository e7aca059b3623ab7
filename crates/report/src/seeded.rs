//! A small seeded generator for the simulations the tests run (no dependency for a test):
//! uniforms, normals, and Student's t with 3 degrees of freedom for heavy tails.

pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Box-Muller.
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// t with 3 df, scaled to unit variance (its variance is 3).
    pub fn t3(&mut self) -> f64 {
        let z = self.normal();
        let chi: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
        z / (chi / 3.0).sqrt() / 3f64.sqrt()
    }
}
