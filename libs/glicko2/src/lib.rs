//! Glicko-2 (Glickman, "Example of the Glicko-2 system", 2012), as the platform uses it:
//! one rating per player per variant, starting at 1500 / RD 350 / volatility 0.06, system
//! constant τ = 0.75, each game its own rating period, and RD growing with inactivity.
//!
//! **Inactivity.** Before a game is rated, the player's RD grows as if `t` empty rating
//! periods had passed: φ² ← φ² + t·σ², capped at 350. A period is [`PERIOD_HOURS`] = 8
//! hours, chosen so that RD climbs from 60 back to 350 in about a year without games at
//! the default volatility: (350² − 60²)/173.7178² / 0.06² ≈ 1095 periods ≈ 365 days.

/// Glicko-2's scale factor between the Glicko and Glicko-2 scales.
pub const SCALE: f64 = 173.7178;
/// The system constant the platform uses.
pub const TAU: f64 = 0.75;
/// A new player's rating.
pub const INITIAL: Rating = Rating {
    rating: 1500.0,
    rd: 350.0,
    volatility: 0.06,
};
/// Length of an inactivity rating period.
pub const PERIOD_HOURS: f64 = 8.0;
/// A rating is provisional while its RD is above this.
pub const PROVISIONAL_RD: f64 = 110.0;
/// Convergence tolerance of the volatility iteration (the paper's ε).
const EPSILON: f64 = 0.000_001;

/// A rating on the Glicko scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rating {
    /// Rating.
    pub rating: f64,
    /// Rating deviation.
    pub rd: f64,
    /// Volatility.
    pub volatility: f64,
}

/// A game's result for the player being rated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// Won.
    Win,
    /// Drew.
    Draw,
    /// Lost.
    Loss,
}

impl Score {
    fn value(self) -> f64 {
        match self {
            Score::Win => 1.0,
            Score::Draw => 0.5,
            Score::Loss => 0.0,
        }
    }
}

impl Rating {
    /// Whether the rating is still provisional.
    pub fn is_provisional(&self) -> bool {
        self.rd > PROVISIONAL_RD
    }

    fn mu(&self) -> f64 {
        (self.rating - 1500.0) / SCALE
    }

    fn phi(&self) -> f64 {
        self.rd / SCALE
    }

    /// RD grown by `periods` rating periods without games (capped at the initial 350).
    pub fn after_inactivity(&self, periods: f64) -> Rating {
        let phi = (self.phi().powi(2) + periods.max(0.0) * self.volatility.powi(2)).sqrt();
        Rating {
            rd: (phi * SCALE).min(INITIAL.rd),
            ..*self
        }
    }

    /// The rating after one rating period with these games (opponent, score), with system
    /// constant `tau`. Steps 2–8 of the paper.
    pub fn rate(&self, games: &[(Rating, Score)], tau: f64) -> Rating {
        let (mu, phi, sigma) = (self.mu(), self.phi(), self.volatility);
        if games.is_empty() {
            return self.after_inactivity(1.0);
        }
        let g =
            |phi_j: f64| 1.0 / (1.0 + 3.0 * phi_j * phi_j / (std::f64::consts::PI.powi(2))).sqrt();
        let e = |mu_j: f64, phi_j: f64| 1.0 / (1.0 + (-g(phi_j) * (mu - mu_j)).exp());
        // Step 3: estimated variance; step 4: estimated improvement.
        let mut v_inv = 0.0;
        let mut delta_sum = 0.0;
        for (opp, score) in games {
            let (mu_j, phi_j) = (opp.mu(), opp.phi());
            let (g_j, e_j) = (g(phi_j), e(mu_j, phi_j));
            v_inv += g_j * g_j * e_j * (1.0 - e_j);
            delta_sum += g_j * (score.value() - e_j);
        }
        let v = 1.0 / v_inv;
        let delta = v * delta_sum;
        // Step 5: new volatility (Illinois algorithm).
        let a = (sigma * sigma).ln();
        let f = |x: f64| {
            let ex = x.exp();
            ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex).powi(2))
                - (x - a) / (tau * tau)
        };
        let mut big_a = a;
        let mut big_b = if delta * delta > phi * phi + v {
            (delta * delta - phi * phi - v).ln()
        } else {
            let mut k = 1.0;
            while f(a - k * tau) < 0.0 {
                k += 1.0;
            }
            a - k * tau
        };
        let (mut f_a, mut f_b) = (f(big_a), f(big_b));
        let mut guard = 0;
        while (big_b - big_a).abs() > EPSILON && guard < 1000 {
            let big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a);
            let f_c = f(big_c);
            if f_c * f_b <= 0.0 {
                big_a = big_b;
                f_a = f_b;
            } else {
                f_a /= 2.0;
            }
            big_b = big_c;
            f_b = f_c;
            guard += 1;
        }
        let sigma_new = (big_a / 2.0).exp();
        // Steps 6–7: new φ and μ.
        let phi_star = (phi * phi + sigma_new * sigma_new).sqrt();
        let phi_new = 1.0 / (1.0 / (phi_star * phi_star) + 1.0 / v).sqrt();
        let mu_new = mu + phi_new * phi_new * delta_sum;
        // Step 8: back to the Glicko scale.
        Rating {
            rating: SCALE * mu_new + 1500.0,
            rd: (SCALE * phi_new).min(INITIAL.rd),
            volatility: sigma_new,
        }
    }
}

/// Rates one game for one player: inactivity growth since its last rated game, then the
/// game as its own rating period against the opponent's pre-game rating.
pub fn rate_game(player: Rating, idle_hours: f64, opponent: Rating, score: Score) -> Rating {
    player
        .after_inactivity(idle_hours / PERIOD_HOURS)
        .rate(&[(opponent, score)], TAU)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_the_papers_worked_example() {
        let player = Rating {
            rating: 1500.0,
            rd: 200.0,
            volatility: 0.06,
        };
        let opp = |rating, rd| Rating {
            rating,
            rd,
            volatility: 0.06,
        };
        let games = [
            (opp(1400.0, 30.0), Score::Win),
            (opp(1550.0, 100.0), Score::Loss),
            (opp(1700.0, 300.0), Score::Loss),
        ];
        let r = player.rate(&games, 0.5);
        // μ' = −0.2069, φ' = 0.8722, σ' = 0.05999 → 1464.05 / 151.52.
        assert!((r.rating - 1464.05).abs() < 0.01, "{}", r.rating);
        assert!((r.rd - 151.52).abs() < 0.01, "{}", r.rd);
        assert!((r.volatility - 0.05999).abs() < 0.00001, "{}", r.volatility);
        assert!(((r.rating - 1500.0) / SCALE - -0.2069).abs() < 0.0001);
        assert!((r.rd / SCALE - 0.8722).abs() < 0.0001);
    }

    #[test]
    fn rd_climbs_from_60_to_350_in_about_a_year() {
        let settled = Rating {
            rating: 1800.0,
            rd: 60.0,
            volatility: 0.06,
        };
        let year = 365.0 * 24.0 / PERIOD_HOURS;
        let after_year = settled.after_inactivity(year);
        assert!(
            after_year.rd > 345.0 && after_year.rd <= 350.0,
            "{}",
            after_year.rd
        );
        let half_year = settled.after_inactivity(year / 2.0);
        assert!(
            half_year.rd > 200.0 && half_year.rd < 300.0,
            "{}",
            half_year.rd
        );
        assert!((settled.after_inactivity(0.0).rd - 60.0).abs() < 1e-9);
    }

    #[test]
    fn wins_raise_losses_lower_and_draws_between_equals_keep_the_rating() {
        let win = rate_game(INITIAL, 0.0, INITIAL, Score::Win);
        let loss = rate_game(INITIAL, 0.0, INITIAL, Score::Loss);
        let draw = rate_game(INITIAL, 0.0, INITIAL, Score::Draw);
        assert!(win.rating > 1500.0 && loss.rating < 1500.0);
        assert!((draw.rating - 1500.0).abs() < 1e-9);
        assert!(
            (win.rating - 1500.0 + (loss.rating - 1500.0)).abs() < 1e-9,
            "symmetric"
        );
        assert!(win.rd < 350.0 && win.is_provisional());
    }
}
