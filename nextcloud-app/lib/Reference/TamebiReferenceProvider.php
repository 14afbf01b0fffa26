<?php

declare(strict_types=1);

namespace OCA\Tamebi\Reference;

use OCA\Tamebi\AppInfo\Application;
use OCP\Collaboration\Reference\ADiscoverableReferenceProvider;
use OCP\Collaboration\Reference\IReference;
use OCP\IL10N;
use OCP\IURLGenerator;

/**
 * "Ask Tamebi" in Nextcloud's Smart Picker (issue #29): the entry Talk's, Text's, Collectives'
 * and Mail's composers list. Choosing it opens the island's picker element (registered by the
 * bundle under the same id, see island/src/picker), which runs in the person's own session.
 *
 * It must never resolve a link: Tamebi renders no previews, so a link someone pastes is left to
 * the providers that own it, and nothing here fetches or reads it.
 */
class TamebiReferenceProvider extends ADiscoverableReferenceProvider {
	/** The provider id; the island's picker element is registered under the same id. */
	public const ID = 'tamebi';

	public function __construct(
		private IL10N $l10n,
		private IURLGenerator $urlGenerator,
	) {
	}

	public function getId(): string {
		return self::ID;
	}

	public function getTitle(): string {
		return $this->l10n->t('Ask Tamebi');
	}

	public function getOrder(): int {
		return 40;
	}

	public function getIconUrl(): string {
		// The dark glyph: the picker lists providers on the page background.
		return $this->urlGenerator->getAbsoluteURL($this->urlGenerator->imagePath(Application::APP_ID, 'app-dark.svg'));
	}

	public function matchReference(string $referenceText): bool {
		return false;
	}

	public function resolveReference(string $referenceText): ?IReference {
		return null;
	}

	public function getCachePrefix(string $referenceId): string {
		return '';
	}

	public function getCacheKey(string $referenceId): ?string {
		return null;
	}
}
