"""Metadata for people's tools and search engines: JSON-LD NewsArticle and Open Graph."""

from __future__ import annotations

from typing import Any

import orjson

from desk import urls
from desk.config import Config
from desk.content.models import Manifest
from desk.render.disclosure import DIGITAL_SOURCE_TYPE
from desk.render.templates import isotime
from desk.render.view import Cited, StoryView

FALLBACK_IMAGE = "/static/og-default.png"
FALLBACK_IMAGE_ALT = "Hanging Context"


def image_of(view: StoryView, config: Config) -> tuple[str, str]:
    """The story's lead picture (its 16x9 crop when desk made them), or the site's
    fallback card (URL, alt text)."""
    lead = view.lead
    if lead is not None:
        return (lead.crops[0] if lead.crops else lead.url), lead.alt or view.story.headline
    return urls.absolute(config, FALLBACK_IMAGE), f"{config.title} card"


def article_images(view: StoryView) -> list[str]:
    """JSON-LD's image: the lead's 16x9, 4x3 and 1x1 crops when desk made them (Google's
    article guidance), else its URL; none without a picture. Not the site's card: that is
    its logo, which Google asks articles not to give as their image; and a newsroom has
    no picture of its own to give instead."""
    lead = view.lead
    if lead is None:
        return []
    return list(lead.crops) if lead.crops else [lead.url]


def script_json(data: Any) -> str:
    """JSON that is safe inside a <script> element (no '</script>', no '<!--'): compact,
    not ASCII-escaped (orjson's output, which is json.dumps's for text, lists and maps)."""
    text = orjson.dumps(data).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


Policies = tuple[tuple[str, str], ...]  # (schema.org property, URL of its page)


def publisher(config: Config, policies: Policies) -> dict[str, Any]:
    """The site as a schema.org NewsMediaOrganization, with its policy pages."""
    return {"@type": "NewsMediaOrganization", "name": config.title,
            "url": urls.absolute(config, urls.HOME),
            "logo": {"@type": "ImageObject", "url": urls.absolute(config, FALLBACK_IMAGE)},
            **dict(policies)}


def publisher_document(config: Config, policies: Policies) -> dict[str, Any]:
    """/.well-known/publisher.json: the publisher and its policies, as JSON-LD."""
    return {"@context": "https://schema.org", **publisher(config, policies)}


def news_article(view: StoryView, config: Config, policies: Policies = ()) -> str:
    """schema.org NewsArticle as JSON-LD (`policies`: the publisher's policy pages).

    The publisher is its author and answers for it; the agent that wrote it is a
    contributor, and `digitalSourceType` says the text is a trained model's (Google's
    guidance: an AI named as the byline's author is no disclosure). A story a person
    reviewed names them as its editor and its page's reviewer."""
    story = view.story
    made = view.disclosure
    organization = {"@type": "NewsMediaOrganization", "name": config.title,
                    "url": urls.absolute(config, urls.HOME)}
    page: dict[str, Any] = {"@type": "WebPage", "@id": view.url}
    data: dict[str, Any] = {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": story.headline,
        "description": story.dek,
        "url": view.url,
        "mainEntityOfPage": page,
        "datePublished": isotime(story.published_at),
        "dateModified": isotime(view.modified_at),
        "inLanguage": config.language,
        "digitalSourceType": DIGITAL_SOURCE_TYPE,
        "author": [organization],
        "publisher": publisher(config, policies),
        "articleSection": view.newsroom_title,
        "isPartOf": {"@type": "PublicationIssue", "issueNumber": story.edition,
                     "url": urls.absolute(config, urls.edition_path(story.edition))},
        "citation": [_source(src.manifest) for src in view.sources],
        "isBasedOn": [src.manifest.source_url for src in view.sources if src.manifest.source_url],
        "license": urls.absolute(config, urls.REUSE_TERMS),
    }
    images = article_images(view)
    if images:
        data["image"] = images
    if view.agent:
        data["contributor"] = [_agent(view)]
    if made.reviewer is not None and made.reviewed_at is not None:
        reviewer = made.reviewer.schema()
        data["editor"] = [reviewer]
        page.update(reviewedBy=reviewer, lastReviewed=made.reviewed_at.date().isoformat())
    accountable = made.editor or made.reviewer
    if accountable is not None:
        data["accountablePerson"] = [accountable.schema()]
    if view.facts:
        data["hasPart"] = [_claim(fact, view) for fact in view.facts]
    if story.beat:
        data["keywords"] = [story.beat]
    # Corrections only: a clarification, an update or an editor's note corrects nothing,
    # though each dates the story's modification (dateModified, the latest change).
    corrected = [c for c in view.corrections if c.kind == "correction"]
    if corrected:
        data["correction"] = [{"@type": "CorrectionComment", "text": c.text,
                               "datePublished": isotime(c.at)} for c in corrected]
    return script_json(data)


def _source(manifest: Manifest) -> dict[str, Any]:
    """A cited manifest as a schema.org CreativeWork."""
    return {"@type": "CreativeWork", "name": manifest.title or manifest.manifest_id,
            "identifier": manifest.manifest_id,
            **({"url": manifest.source_url} if manifest.source_url else {}),
            **({"publisher": manifest.source_name} if manifest.source_name else {}),
            **({"datePublished": manifest.published_date.isoformat()}
               if manifest.published_date else {})}


def _claim(fact: Cited, view: StoryView) -> dict[str, Any]:
    """A key fact as a schema.org Claim the page makes: addressable at its fragment,
    citing each source by its URL with the manifest's id and the ids of the claims it
    cites there (the source's title and publisher are the article's citation of the same
    manifest id, not repeated). Not a ClaimReview: the desk rates no one's claims."""
    urls_of = {src.manifest.manifest_id: src.manifest.source_url for src in view.sources}
    cited = []
    for cite in fact.cites:
        url = urls_of.get(cite.manifest_id)
        cited.append({"@type": "CreativeWork", **({"url": url} if url else {}), "identifier": [
            {"@type": "PropertyValue", "propertyID": "manifest_id", "value": cite.manifest_id},
            *({"@type": "PropertyValue", "propertyID": "claim_id", "value": claim}
              for claim in cite.claim_ids)]})
    return {"@type": "Claim", "@id": f"{view.url}#{fact.anchor}", "text": fact.text,
            "appearance": {"@id": view.url}, "citation": cited}


def _agent(view: StoryView) -> dict[str, Any]:
    """The writing agent (software: schema.org's contributors are people or organizations,
    so it is an organization of that additional type)."""
    return {"@type": "Organization", "additionalType": "https://schema.org/SoftwareApplication",
            "name": view.agent, "url": view.agent_url}


def open_graph(view: StoryView, config: Config) -> tuple[tuple[str, str], ...]:
    """Open Graph and Twitter card properties of a story page, in order."""
    story = view.story
    image, alt = image_of(view, config)
    tags = [
        ("og:type", "article"),
        ("og:title", story.headline),
        ("og:description", story.dek),
        ("og:url", view.url),
        ("og:site_name", config.title),
        ("og:locale", locale(config.language)),
        ("og:image", image),
        ("og:image:alt", alt),
        ("article:published_time", isotime(story.published_at)),
        ("article:modified_time", isotime(view.modified_at)),
        ("article:section", view.newsroom_title),
    ]
    if story.beat:
        tags.append(("article:tag", story.beat))
    tags += [("twitter:card", "summary_large_image"), ("twitter:title", story.headline),
             ("twitter:description", story.dek), ("twitter:image", image),
             ("twitter:image:alt", alt)]
    return tuple(tags)


def locale(language: str) -> str:
    """An Open Graph locale (language_TERRITORY) for a language code."""
    if "-" in language or "_" in language:
        lang, _, territory = language.replace("-", "_").partition("_")
        return f"{lang.lower()}_{territory.upper()}"
    return {"en": "en_US"}.get(language, f"{language}_{language.upper()}")
